// The gate audit (src/billing/audit.ts) on both gates: each way the gate's copy can fall out of
// line with the ledger when a step of "ledger first, then tell the gate" is lost, put in place by
// hand, and mended by audit passes — while a reservation in flight (in the gate, its row not yet
// committed) is left alone until it has been out of line past the grace period. And a delete:
// its release is written with the delete, and a gate that did not hear of it is mended.
import t from 'tap';
import { HeldExecutor, startWorld, type World } from '../helpers/world.js';
import { GateAudit } from '../../src/billing/audit.js';
import { readLedger, recordReservation } from '../../src/billing/ledger.js';
import { reserveWithRebuild } from '../../src/billing/gate.js';
import { newId } from '../../src/store/ids.js';
import type { Sql } from '../../src/store/db.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function reserveInGate(w: World, accountId: string, credits: number): Promise<string> {
  const conversionId = newId('conv');
  const r = await reserveWithRebuild(w.app.deps.gate, { accountId, conversionId, credits, concurrencyLimit: 100 }, w.app.deps.ledger.readLedger);
  if (r.kind !== 'reserved') throw new Error(`reserve answered ${r.kind}`);
  return conversionId;
}

async function ledgerRows(sql: Sql, accountId: string, conversionId: string, rows: Array<[string, number]>): Promise<void> {
  for (const [kind, amount] of rows) {
    await sql`insert into ledger (account_id, conversion_id, kind, amount) values (${accountId}, ${conversionId}, ${kind}, ${amount})`;
  }
}

for (const gateKind of ['redis', 'local'] as const) {
  t.test(`the audit mends the ${gateKind} gate from the ledger`, async (t) => {
    const w = await startWorld('postgres', {}, { redis: gateKind === 'redis' });
    t.teardown(() => w.close());
    const gate = w.app.deps.gate;
    const sql = w.db.sql;
    const { accountId } = await w.newKey({ credits: 1000 });
    const audit = new GateAudit(sql, gate, 300);
    const inLine = async (): Promise<void> => {
      t.equal(await gate.balance(accountId), (await readLedger(sql, accountId)).balance, 'the gate\'s balance is the ledger\'s');
      const open = (await readLedger(sql, accountId)).reservations.map((r) => r.conversionId).sort();
      t.same([...(await gate.held(accountId))!.keys()].sort(), open, 'the gate holds the ledger\'s open reservations');
    };

    await t.test('a settle the gate was not told is settled in the gate at the next look, not while it may be in flight', async (t) => {
      const conv = await reserveInGate(w, accountId, 40);
      await ledgerRows(sql, accountId, conv, [['reserve', -40], ['release', 40], ['charge', -25]]);
      const first = await audit.account(accountId);
      t.same({ settled: first.settled, outOfLine: first.outOfLine }, { settled: 0, outOfLine: 1 }, 'first seen: maybe a settle about to be told');
      t.ok((await gate.held(accountId))!.has(conv), 'still held');
      await sleep(350);
      t.equal((await audit.account(accountId)).settled, 1, 'seen again: settled as the ledger says');
      await inLine();
      t.equal(await gate.balance(accountId), 975, 'charged 25 of the 40 reserved');
    });

    await t.test('a settle told between two looks is not mended', async (t) => {
      const conv = await reserveInGate(w, accountId, 10);
      await ledgerRows(sql, accountId, conv, [['reserve', -10], ['release', 10], ['charge', -4]]);
      t.equal((await audit.account(accountId)).settled, 0, 'committed, not yet told: left alone');
      t.match(await gate.settle(accountId, conv, 4), { settled: true }, 'its own tell settles it');
      await sleep(350);
      const c = await audit.account(accountId);
      t.same({ settled: c.settled, outOfLine: c.outOfLine }, { settled: 0, outOfLine: 0 }, 'nothing left to mend');
      await inLine();
      t.equal(await gate.balance(accountId), 971);
    });

    await t.test('a grant the gate missed is added to it, while submits and settles in flight are not taken for one', async (t) => {
      const fresh = await w.newKey({ credits: 100 }); // a grant row a minute old at most
      let moving = false;
      // The gate as the audit sees it; while `moving`, a submit reserves between the audit's two
      // looks at the account, as under a flood.
      const busy: typeof gate = Object.create(gate, {
        holdings: {
          value: async (accountId: string) => {
            const h = await gate.holdings(accountId);
            if (moving && accountId === fresh.accountId) {
              moving = false;
              await reserveInGate(w, accountId, 1);
            }
            return h;
          },
        },
      });
      const watcher = new GateAudit(sql, busy, 300);
      await reserveInGate(w, fresh.accountId, 30); // in the gate, its ledger row not committed yet
      const told = await reserveInGate(w, fresh.accountId, 20);
      // Settled in the ledger (5 charged of 20), the gate not told yet.
      await ledgerRows(sql, fresh.accountId, told, [['reserve', -20], ['release', 20], ['charge', -5]]);
      t.equal((await watcher.run()).adjusted, 0, 'a reservation in flight and a settle not yet told are no missed grant');
      t.equal(await gate.balance(fresh.accountId), 50, 'the gate is left as it was');
      await sql`insert into ledger (account_id, kind, amount) values (${fresh.accountId}, 'grant', 5)`; // the gate never told
      moving = true;
      t.equal((await watcher.run()).adjusted, 0, 'the gate moved between the audit\'s two looks: no conclusion');
      t.equal(await gate.balance(fresh.accountId), 49, 'nothing added (the submit that moved it took 1)');
      t.equal((await watcher.run()).adjusted, 1, 'the next pass finds the gate still and adds the grant it missed');
      t.equal(await gate.balance(fresh.accountId), 54, 'the 5 granted are there');
      t.equal((await gate.held(fresh.accountId))!.size, 3, 'and the account keeps its reservations (it is not rebuilt)');
      t.equal((await watcher.run()).adjusted, 0, 'once only');
      t.equal(await gate.balance(fresh.accountId), 54);
      // Two processes' audits at once, with both having looked before either mends: added once.
      await sql`insert into ledger (account_id, kind, amount) values (${fresh.accountId}, 'grant', 3)`;
      let looked = 0;
      let bothLooked!: () => void;
      const both = new Promise<void>((r) => { bothLooked = r; });
      // Each audit's change to the balance (a mend, or a plain adjust) waits for the other's.
      const barrier = async (): Promise<void> => {
        if (++looked === 2) bothLooked();
        await both;
      };
      const waiting: typeof gate = Object.create(gate, {
        mend: { value: async (...args: Parameters<typeof gate.mend>) => { await barrier(); return gate.mend(...args); } },
        adjust: { value: async (...args: Parameters<typeof gate.adjust>) => { await barrier(); return gate.adjust(...args); } },
      });
      const [one, two] = await Promise.all([new GateAudit(sql, waiting, 300).run(), new GateAudit(sql, waiting, 300).run()]);
      t.equal(one.adjusted + two.adjusted, 1, 'both found the 3 missing; one mend landed');
      t.equal(await gate.balance(fresh.accountId), 57, 'the 3 granted are there once');
    });

    await t.test('a reservation with no ledger row is released once past the grace period, not before', async (t) => {
      const conv = await reserveInGate(w, accountId, 30);
      t.equal((await audit.account(accountId)).released, 0, 'first seen: maybe a submit in flight');
      t.ok((await gate.held(accountId))!.has(conv), 'still held');
      await sleep(350);
      t.equal((await audit.account(accountId)).released, 1, 'still out of line past the grace period: released');
      await inLine();
    });

    await t.test('a submit that commits within the grace period is left alone', async (t) => {
      const conv = await reserveInGate(w, accountId, 10);
      await audit.account(accountId);
      await recordReservation(sql, accountId, conv, 10);
      await sleep(350);
      const c = await audit.account(accountId);
      t.same({ released: c.released, adopted: c.adopted, settled: c.settled }, { released: 0, adopted: 0, settled: 0 });
      await inLine();
      await w.app.deps.ledger.settle(accountId, conv, 10);
    });

    await t.test('an open ledger reservation the gate lost is adopted once past the grace period', async (t) => {
      // A rebuild that read the ledger just before this reservation's row committed.
      const conv = newId('conv');
      await sql`insert into conversions (id, account_id, name, operation, status, created_at)
                values (${conv}, ${accountId}, 'pdf', 'parse', 'running', now())`;
      await ledgerRows(sql, accountId, conv, [['reserve', -50]]);
      await gate.release(accountId, conv); // not held: nothing changes, as after such a rebuild
      const before = await gate.balance(accountId);
      t.equal((await audit.account(accountId)).adopted, 0, 'first seen: not yet');
      await sleep(350);
      t.equal((await audit.account(accountId)).adopted, 1, 'adopted');
      t.equal(await gate.balance(accountId), before! - 50, 'its credits are held again');
      await inLine();
      await w.app.deps.ledger.settle(accountId, conv, 0);
      await inLine();
    });

    await t.test('an account the gate does not hold is left to the next rebuild', async (t) => {
      await gate.forget(accountId);
      t.same(await audit.account(accountId), { settled: 0, released: 0, adopted: 0, outOfLine: 0 });
      t.equal(await gate.held(accountId), null);
    });
  });
}

t.test('a delete releases its reservation in the ledger with the rows; a gate that missed it is mended', async (t) => {
  const held = new HeldExecutor();
  held.hold();
  // No periodic sweep: the audit's looks are the test's own (MEND_INTERVAL_S).
  const w = await startWorld('postgres', { MEND_INTERVAL_S: '600' }, { executor: held });
  t.teardown(async () => { held.release(); await w.close(); await held.close(); });
  const res = await w.req('POST', '/v1/convert/html', { json: { html: '<p>deleted while running</p>' }, headers: { prefer: 'respond-async' } });
  const { id } = await res.json() as { id: string };
  const ledger = w.app.deps.ledger;
  const tell = ledger.tell.bind(ledger);
  ledger.tell = async () => { throw Object.assign(new Error('Connection is closed.'), { name: 'Error' }); };
  t.equal((await w.req('DELETE', `/v1/conversions/${id}`)).status, 200, 'the delete happened, so it answers 200 though the gate did not hear');
  ledger.tell = tell;
  const rows = await w.db.sql`select kind from ledger where conversion_id = ${id} order by id`;
  t.same(rows.map((r) => r.kind), ['reserve', 'release'], 'released (not charged) in the delete\'s transaction');
  t.equal(await w.app.deps.gate.running(w.accountId), 1, 'the gate still holds it');
  t.equal((await w.app.deps.conversions.audit.run()).settled, 0, 'the audit\'s first look leaves it to a tell that may be on its way');
  t.equal(await w.app.deps.gate.running(w.accountId), 1);
  await sleep(350);
  t.equal((await w.app.deps.conversions.audit.run()).settled, 1, 'its next look settles it in the gate');
  t.equal(await w.app.deps.gate.running(w.accountId), 0);
  t.equal(await w.app.deps.gate.balance(w.accountId), (await readLedger(w.db.sql, w.accountId)).balance, 'balance as the ledger says');
});
