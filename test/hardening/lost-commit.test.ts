// A commit whose answer is lost: the database committed, the connection died before it said so.
// The process cannot tell that from a transaction that never happened, so it must not act as if
// nothing was written. Two places meet it:
// - a submit's insert (the conversion, its reservation, its jobs): the client gets a retryable
//   503, but the gate must keep the reservation while the ledger has it — the conversion runs and
//   is charged — and give it back only when the ledger, once it answers, has no row;
// - a job's outcome: its retry finds the job already done by this process and must keep the
//   outputs that the committed rows point at, not discard them as a run that lost its job.
// And wherever a conversion ends, its credits are settled in the same transaction: a reader that
// sees it finished sees it charged.
import t from 'tap';
import { HeldExecutor, startWorld, storeModes, type World } from '../helpers/world.js';
import { eventually, untilTerminal } from '../helpers/until.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const connectionClosed = (): Error => Object.assign(new Error('write CONNECTION_CLOSED 127.0.0.1:5432'), { code: 'CONNECTION_CLOSED' });
const TERMINAL = ['completed', 'completed_with_errors', 'failed'];

/** The conversion service's insert step, to wrap (a private method of the running service). */
interface Persisting { persist: (...args: unknown[]) => Promise<unknown> }

/** Available credits by the ledger: grants − charges − open reservations. */
async function ledgerBalance(w: World, accountId: string): Promise<number> {
  const [r] = await w.db.sql`select coalesce(sum(amount), 0)::int as n from ledger where account_id = ${accountId}`;
  return Number(r!.n);
}

for (const mode of storeModes()) {
  t.test(`a lost commit answer (${mode})`, async (t) => {
    const held = new HeldExecutor();
    // No periodic sweep: the audit's looks are the test's own (MEND_INTERVAL_S).
    const w = await startWorld(mode, { MEND_INTERVAL_S: '600' }, { executor: held });
    t.teardown(async () => { held.release(); await w.close(); await held.close(); });
    const svc = w.app.deps.conversions as unknown as Persisting;
    const persist = svc.persist.bind(svc);
    const gate = w.app.deps.gate;

    await t.test('a submit committed with its answer lost: 503, the reservation is kept, the conversion runs and is charged once', async (t) => {
      const before = await w.app.deps.ledger.balance(w.accountId);
      held.hold();
      svc.persist = async (...args) => {
        await persist(...args);
        throw connectionClosed();
      };
      const res = await w.req('POST', '/v1/convert/html', { json: { html: '<h1>Lost answer</h1><p>Committed all the same.</p>' } });
      svc.persist = persist;
      t.equal(res.status, 503, 'the client is told to retry');
      t.match(await res.json(), { error: 'service_unavailable', retryable: true });
      const [conv] = await w.db.sql`select id from conversions where account_id = ${w.accountId} order by created_at desc limit 1`;
      t.ok(conv, 'the conversion was committed');
      const id = conv!.id as string;
      await sleep(2_500); // past the first look at the ledger (1 s)
      t.equal(await gate.running(w.accountId), 1, 'the gate still holds the reservation the ledger has');
      held.release();
      t.equal((await untilTerminal(w, id)).status, 'completed');
      const rows = await w.db.sql`select kind, amount from ledger where conversion_id = ${id} order by id`;
      t.same(rows.map((r) => r.kind), ['reserve', 'release', 'charge'], 'reserved, then settled once');
      const charged = -Number(rows[2]!.amount);
      t.ok(charged > 0, `charged ${charged}`);
      t.equal(await eventually(() => gate.running(w.accountId), 0), 0, 'the reservation is settled in the gate');
      t.equal(await w.app.deps.ledger.balance(w.accountId), before - charged, 'the gate\'s balance moved by the charge');
      t.equal(await ledgerBalance(w, w.accountId), before - charged, 'and so did the ledger\'s');
    });

    await t.test('a submit that never committed, the database away: 503, the reservation is given back once the ledger says so', async (t) => {
      const before = await w.app.deps.ledger.balance(w.accountId);
      svc.persist = async () => { throw connectionClosed(); };
      const res = await w.req('POST', '/v1/convert/html', { json: { html: '<p>Never stored.</p>' } });
      svc.persist = persist;
      t.equal(res.status, 503);
      t.equal(await eventually(() => gate.running(w.accountId), 0), 0, 'the gate holds no reservation');
      t.equal(await w.app.deps.ledger.balance(w.accountId), before, 'no credit was taken');
      t.equal(await ledgerBalance(w, w.accountId), before, 'the ledger agrees');
    });

    await t.test('a job whose outcome committed with the answer lost keeps its outputs and is charged once', async (t) => {
      const before = await w.app.deps.ledger.balance(w.accountId);
      // Output over the inline size: it lives in a blob the committed rows point at.
      const line = 'Lost answers must not lose outputs. ';
      const text = line.repeat(Math.ceil(1.2 * 1024 * 1024 / line.length));
      held.hold();
      const res = await w.req('POST', '/v1/convert/text', { json: { text }, headers: { prefer: 'respond-async' } });
      t.equal(res.status, 202);
      const { id } = await res.json() as { id: string };
      for (let i = 0; i < 200 && held.waitingTasks === 0; i++) await sleep(25);
      t.equal(held.waitingTasks, 1, 'the job is running');
      // The next transaction that records an outcome commits, then its answer is lost: every
      // COMMIT on a reserved connection is watched (the outcome's transaction is sent on one,
      // store/db.ts pipelined), and the first after which the conversion is finished fails as a
      // closed connection fails.
      const sql = w.db.sql as unknown as { reserve: (...args: unknown[]) => Promise<unknown> };
      const reserve = sql.reserve;
      let lost = 0;
      // Read on the same connection: the embedded store has only that one.
      const finished = async (r: typeof w.db.sql): Promise<boolean> => {
        const [row] = await r`select status from conversions where id = ${id}`;
        return TERMINAL.includes(row!.status as string);
      };
      sql.reserve = async function (this: unknown, ...args: unknown[]) {
        const r = await reserve.apply(this, args) as (...a: unknown[]) => unknown;
        return new Proxy(r, {
          apply(target, self, argv) {
            const q = Reflect.apply(target, self, argv) as PromiseLike<unknown> & { execute(): unknown };
            if ((argv[0] as string[] | undefined)?.[0] !== 'commit') return q;
            const answered = Promise.resolve(q).then(async (v) => {
              if (lost === 0 && await finished(r as unknown as typeof w.db.sql)) {
                lost++;
                // A closed connection is not handed back (the pool replaces it): this one is
                // open, so it goes back here.
                (r as unknown as { release(): void }).release();
                throw connectionClosed();
              }
              return v;
            });
            return Object.assign(answered, { execute: () => answered });
          },
        });
      };
      t.teardown(() => { sql.reserve = reserve; });
      held.release();
      const c = await untilTerminal(w, id);
      sql.reserve = reserve;
      t.equal(lost, 1, 'the outcome\'s commit answer was lost once');
      t.equal(c.status, 'completed');
      const [job] = await w.db.sql`select status, attempts from jobs where conversion_id = ${id}`;
      t.same({ status: job!.status, attempts: job!.attempts }, { status: 'done', attempts: 1 }, 'recorded by its first run');
      const out = c.files.find((f) => f.role === 'output');
      t.ok(out && out.bytes > 1024 * 1024, 'the output is over the inline size');
      const body = await w.req('GET', `/v1/conversions/${id}/files/${out!.id}/content`);
      t.equal(body.status, 200, 'the output is there to download');
      const got = await body.text();
      t.equal(got.length, out!.bytes, 'whole');
      t.match(got, /Lost answers must not lose outputs\./);
      const rows = await w.db.sql`select kind, amount from ledger where conversion_id = ${id} order by id`;
      t.same(rows.map((r) => r.kind), ['reserve', 'release', 'charge'], 'settled once');
      t.equal(await eventually(() => gate.running(w.accountId), 0), 0, 'the reservation is settled in the gate');
      t.equal(await w.app.deps.ledger.balance(w.accountId), before + Number(rows[2]!.amount), 'the gate moved by the charge');
    });

    await t.test('a finished conversion is charged in the transaction that ends it', async (t) => {
      // The gate is away when the conversion ends: the ledger settles all the same, with the status.
      const ledger = w.app.deps.ledger;
      const tell = ledger.tell.bind(ledger);
      let refused = 0;
      ledger.tell = async () => { refused++; throw connectionClosed(); };
      t.teardown(() => { ledger.tell = tell; });
      held.hold();
      const res = await w.req('POST', '/v1/convert/html', { json: { html: '<p>Charged with its status.</p>' }, headers: { prefer: 'respond-async' } });
      const { id } = await res.json() as { id: string };
      for (let i = 0; i < 200 && held.waitingTasks === 0; i++) await sleep(25);
      held.release();
      t.equal((await untilTerminal(w, id)).status, 'completed');
      const rows = await w.db.sql`select kind from ledger where conversion_id = ${id} order by id`;
      await eventually(async () => refused, 1);
      t.same(rows.map((r) => r.kind), ['reserve', 'release', 'charge'], 'settled as soon as it is seen completed');
      t.equal(refused, 1, 'the gate was not told');
      ledger.tell = tell;
      t.equal(await gate.running(w.accountId), 1, 'the gate still holds the reservation');
      t.equal((await w.app.deps.conversions.audit.run()).settled, 0, 'the audit\'s first look leaves it to a tell that may be on its way');
      await sleep(350);
      t.equal((await w.app.deps.conversions.audit.run()).settled, 1, 'its next look settles it in the gate');
      t.equal(await gate.running(w.accountId), 0);
      t.equal(await ledger.balance(w.accountId), await ledgerBalance(w, w.accountId), 'gate = ledger');
    });
  });
}
