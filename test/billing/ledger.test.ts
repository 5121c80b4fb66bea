// The Postgres ledger behind the billing gate: sums, open reservations, exactly-once settlement,
// grants, and rebuilding a gate that lost its state. Real Postgres (a schema of this file's own),
// run against RedisGate on real Redis (a prefix of its own) and against LocalGate.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { Redis } from 'ioredis';
import { openDb, type Sql } from '../../src/store/db.js';
import { createAccount } from '../../src/store/accounts.js';
import { Ledger, grantCredits, readLedger, recordReservation } from '../../src/billing/ledger.js';
import { reserveWithRebuild, type Gate, type SettleResult } from '../../src/billing/gate.js';
import { RedisGate } from '../../src/billing/redis-gate.js';
import { LocalGate } from '../../src/billing/local-gate.js';
import { PG_URL, REDIS_URL, deletePrefix } from '../helpers/world.js';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-ledger-'));
const schema = `t_${randomBytes(6).toString('hex')}`;
const db = await openDb({ databaseUrl: PG_URL, dataDir, schema, max: 8 });
const sql = db.sql;
const redis = new Redis(REDIS_URL, { enableAutoPipelining: true });
const prefix = `test:ledger:${randomBytes(6).toString('hex')}:`;

t.teardown(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.close();
  const admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop schema if exists "${schema}" cascade`);
  await admin.end();
  rmSync(dataDir, { recursive: true, force: true });
});

const newAccount = async () => (await createAccount(sql, { name: 'ledger test', plan: 'pro' })).id;

/** Reserve in the gate and write the reserve row, as a submit does. */
async function reserve(ledger: Ledger, accountId: string, conversionId: string, credits: number): Promise<void> {
  const r = await reserveWithRebuild(ledger.gate, { accountId, conversionId, credits, concurrencyLimit: 100 }, ledger.readLedger);
  if (r.kind !== 'reserved') throw new Error(`expected reserved, got ${r.kind}`);
  await sql.begin((tx) => recordReservation(tx as unknown as Sql, accountId, conversionId, credits));
}

async function rows(accountId: string): Promise<Array<[string, number]>> {
  const rs = await sql`select kind, amount from ledger where account_id = ${accountId} order by id`;
  return rs.map((r) => [r.kind as string, r.amount as number]);
}

const gates: Record<string, () => Gate> = {
  RedisGate: () => new RedisGate({ redis, prefix }),
  LocalGate: () => new LocalGate(),
};

for (const [name, make] of Object.entries(gates)) {
  t.test(`the ledger with ${name}`, async (t) => {
    const gate = make();
    const ledger = new Ledger(sql, gate);
    // Conversion ids are unique across the whole ledger, as real ones are: one set per gate.
    const id = (s: string) => `${s}_${name}`;

    await t.test('a grant is a ledger row and the balance is the ledger sum', async (t) => {
      const a = await newAccount();
      await ledger.grant(a, 100, 'welcome');
      t.strictSame(await rows(a), [['grant', 100]]);
      t.strictSame(await readLedger(sql, a), { balance: 100, reservations: [] });
      t.equal(await gate.balance(a), null, 'an unloaded gate is not loaded by a grant');
      t.equal(await ledger.balance(a), 100, 'the balance falls back to the ledger');
      t.equal(await gate.balance(a), 100, 'and that read loaded the gate: the next one is a gate call');
    });

    await t.test('a balance read that money moved under does not load the gate', async (t) => {
      const a = await newAccount();
      await ledger.grant(a, 50, 'start');
      // A grant lands between the epoch read and the ledger read: the load must be refused.
      const read = gate.readBalance.bind(gate);
      gate.readBalance = async (id: string) => {
        const r = await read(id);
        await ledger.grant(a, 7, 'racing');
        return r;
      };
      try {
        t.equal(await ledger.balance(a), 57, 'the answer is the ledger read after the grant');
      } finally {
        gate.readBalance = read;
      }
      const after = await gate.balance(a);
      t.ok(after === null || after === 57, `the gate holds nothing or the truth (${after})`);
      t.equal(await ledger.balance(a), 57);
      t.equal(await gate.balance(a), 57);
    });

    await t.test('balance reads of an account the gate does not hold share the ledger reads made after them', async (t) => {
      const a = await newAccount();
      await ledger.grant(a, 40, 'start');
      await gate.forget(a);
      // Counts this ledger's reads of the account, and holds the answer of the first until `release`;
      // `firstRan` settles once Postgres has answered that first statement, so its snapshot is taken.
      let statements = 0;
      let release!: () => void;
      const held = new Promise<void>((r) => { release = r; });
      let ran!: () => void;
      const firstRan = new Promise<void>((r) => { ran = r; });
      const counting = new Proxy(sql, {
        apply(target, self, args) {
          const query = Reflect.apply(target, self, args) as PromiseLike<unknown>;
          // A fragment the statement is built of (its rows about some conversions) is not a read;
          // readLedger's statement is the one that answers `open` reservations.
          if (!(args[0] as TemplateStringsArray).join('').includes(' as open,')) return query;
          statements++;
          const answer = Promise.resolve(query);
          if (statements !== 1) return answer;
          answer.then(ran, ran);
          return held.then(() => answer);
        },
      });
      const shared = new Ledger(counting, gate);
      const first = Array.from({ length: 10 }, () => shared.balance(a));
      // The statement is sent at once but may reach Postgres after a statement sent later on
      // another connection of the pool: the grant is made once the first read has been answered.
      await firstRan;
      // Money the first read cannot see: the calls made now must be answered from a later read.
      await sql`insert into ledger (account_id, kind, amount) values (${a}, 'grant', 2)`;
      const later = Array.from({ length: 10 }, () => shared.balance(a));
      await new Promise((r) => setImmediate(r));
      t.equal(statements, 1, 'the calls made while a read runs wait for it to end before theirs starts');
      release();
      t.strictSame(await Promise.all(first), Array(10).fill(40), 'ten calls, one read');
      t.strictSame(await Promise.all(later), Array(10).fill(42), 'ten calls made during it: one read after it, which saw the grant');
      t.equal(statements, 2, 'two ledger reads in all');
    });

    await t.test('open reservations are listed and already subtracted', async (t) => {
      const a = await newAccount();
      await ledger.grant(a, 100, 'start');
      await reserve(ledger, a, id('conv_a'), 30);
      await reserve(ledger, a, id('conv_b'), 5);
      const snap = await readLedger(sql, a);
      t.equal(snap.balance, 65);
      t.strictSame(snap.reservations.sort((x, y) => x.conversionId.localeCompare(y.conversionId)),
        [{ conversionId: id('conv_a'), credits: 30 }, { conversionId: id('conv_b'), credits: 5 }]);
      t.equal(await gate.balance(a), 65, 'the gate agrees');
      await ledger.settle(a, id('conv_a'), 12);
      t.strictSame(await readLedger(sql, a), { balance: 83, reservations: [{ conversionId: id('conv_b'), credits: 5 }] }, '65 + 30 released - 12 charged');
      t.equal(await gate.balance(a), 83);
    });

    await t.test('20 concurrent settles of one conversion charge it once', async (t) => {
      const a = await newAccount();
      await ledger.grant(a, 50, 'start');
      await reserve(ledger, a, id('conv_once'), 10);
      const results = await Promise.all(Array.from({ length: 20 }, () => ledger.settle(a, id('conv_once'), 4)));
      t.equal(results.filter((r) => r?.first).length, 1, 'one settle wrote the rows');
      t.ok(results.every((r) => r && r.reserved === 10 && r.charged === 4), 'every settle reports the same outcome');
      t.strictSame(await rows(a), [['grant', 50], ['reserve', -10], ['release', 10], ['charge', -4]]);
      t.equal((await readLedger(sql, a)).balance, 46);
      t.equal(await gate.balance(a), 46);
      t.equal(await gate.running(a), 0);
    });

    await t.test('a charge above the reservation is clamped to it; a release charges nothing', async (t) => {
      const a = await newAccount();
      await ledger.grant(a, 50, 'start');
      await reserve(ledger, a, id('conv_big'), 3);
      await reserve(ledger, a, id('conv_rel'), 7);
      t.match(await ledger.settle(a, id('conv_big'), 99), { reserved: 3, charged: 3 });
      t.match(await ledger.release(a, id('conv_rel')), { reserved: 7, charged: 0 });
      t.strictSame(await rows(a), [['grant', 50], ['reserve', -3], ['reserve', -7], ['release', 3], ['charge', -3], ['release', 7]]);
      t.equal(await gate.balance(a), 47);
    });

    await t.test('settling a conversion that never reserved does nothing', async (t) => {
      const a = await newAccount();
      await ledger.grant(a, 5, 'start');
      t.equal(await ledger.settle(a, id('conv_render'), 0), undefined);
      t.strictSame(await rows(a), [['grant', 5]]);
    });

    await t.test('a settle cut off before the gate heard of it is healed by the next call', async (t) => {
      const a = await newAccount();
      await ledger.grant(a, 20, 'start');
      await reserve(ledger, a, id('conv_cut'), 6);
      const deaf = new Ledger(sql, { ...gate, settle: async (): Promise<SettleResult> => { throw new Error('gate down'); } } as Gate);
      await t.rejects(deaf.settle(a, id('conv_cut'), 2), /gate down/);
      t.equal((await readLedger(sql, a)).balance, 18, 'the ledger has the settlement');
      t.equal(await gate.balance(a), 14, 'the gate still holds the reservation');
      t.match(await ledger.settle(a, id('conv_cut'), 5), { first: false, reserved: 6, charged: 2 }, 'the recorded charge, not the new one');
      t.equal(await gate.balance(a), 18);
      t.equal(await gate.running(a), 0);
    });

    await t.test('a gate that lost its state is rebuilt from the ledger with its open reservations', async (t) => {
      const a = await newAccount();
      await ledger.grant(a, 40, 'start');
      await reserve(ledger, a, id('conv_open'), 8);
      await reserve(ledger, a, id('conv_done'), 2);
      await ledger.settle(a, id('conv_done'), 2);
      await gate.forget(a);
      t.equal(await gate.balance(a), null);
      await reserve(ledger, a, id('conv_new'), 1);
      t.equal(await gate.balance(a), 29, '40 - 8 open - 2 charged - 1 new');
      t.equal(await gate.running(a), 2, 'conv_open came back, conv_done did not');
      t.match(await gate.settle(a, id('conv_open'), 0), { settled: true, reserved: 8 });
    });

    await t.test('grants are whole positive credits', async (t) => {
      const a = await newAccount();
      for (const bad of [0, -5, 1.5, 2 ** 31]) await t.rejects(ledger.grant(a, bad, 'bad'), TypeError, String(bad));
      t.strictSame(await rows(a), []);
    });

    await t.test('the table refuses rows that break the sign convention', async (t) => {
      const a = await newAccount();
      await t.rejects(sql`insert into ledger (account_id, kind, amount) values (${a}, 'reserve', -1)`, /check/, 'a reserve needs a conversion');
      await t.rejects(sql`insert into ledger (account_id, conversion_id, kind, amount) values (${a}, ${id('c1')}, 'reserve', 5)`, /check/, 'a reserve is negative');
      await t.rejects(sql`insert into ledger (account_id, conversion_id, kind, amount) values (${a}, ${id('c1')}, 'grant', 5)`, /check/, 'a grant has no conversion');
      await sql`insert into ledger (account_id, conversion_id, kind, amount) values (${a}, ${id('c2')}, 'reserve', -1)`;
      await t.rejects(sql`insert into ledger (account_id, conversion_id, kind, amount) values (${a}, ${id('c2')}, 'reserve', -1)`, /duplicate key/, 'one reserve per conversion');
    });
  });
}

t.test('grantCredits for the admin CLI writes the row and adjusts a loaded Redis account', async (t) => {
  const gate = new RedisGate({ redis, prefix });
  const ledger = new Ledger(sql, gate);
  const a = await newAccount();
  t.strictSame(await grantCredits(sql, a, 10, 'cli', { url: REDIS_URL, prefix }), { adjusted: false }, 'not loaded: the ledger row is enough');
  await reserve(ledger, a, 'conv_cli', 1); // loads the account from the ledger: 10 - 1
  t.equal(await gate.balance(a), 9);
  t.strictSame(await grantCredits(sql, a, 5, 'cli again', { url: REDIS_URL, prefix }), { adjusted: true });
  t.equal(await gate.balance(a), 14);
  t.strictSame(await grantCredits(sql, a, 1, 'no redis'), { adjusted: false });
  t.equal((await readLedger(sql, a)).balance, 15);
  const [note] = await sql`select note from ledger where account_id = ${a} and kind = 'grant' order by id limit 1`;
  t.equal(note!.note, 'cli');
});
