// The database client under connections cut again and again (a Postgres restarting, a proxy
// dropping connections), through src/store/db.ts's settings: transactions whose connection
// dies must fail with a connection error — the driver must not end the process (the ROLLBACK it
// sends on a closed connection, its array-types fetch on a connection that dies; mended by
// scripts/patch-postgres.mjs) — and once the database is back every query must get through at
// once (no connection left stalled behind a stale write, no reconnect backoff of seconds).
import t from 'tap';
import { isDependencyDown } from '../../src/errors.js';
import { dbBehindRelay } from '../helpers/db-relay.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('transactions through repeated cuts fail cleanly, and the pool is whole the moment Postgres is back', async (t) => {
  const { db, relay } = await dbBehindRelay(t);
  await db.sql`create table counter (n int not null)`;
  await db.sql`insert into counter values (0)`;

  let stop = false;
  let committed = 0;
  const failures = new Map<string, number>();
  const worker = async (): Promise<void> => {
    while (!stop) {
      try {
        await db.sql.begin(async (tx) => {
          await tx`update counter set n = n + 1`;
          await tx`select pg_sleep(0.005)`;
        });
        committed++;
      } catch (err) {
        const e = err as { code?: string; message: string };
        const what = isDependencyDown(err) ? 'connection' : `${e.code ?? ''} ${e.message}`;
        failures.set(what, (failures.get(what) ?? 0) + 1);
        await sleep(5);
      }
    }
  };
  const workers = Array.from({ length: 8 }, () => worker());
  for (let i = 0; i < 8; i++) {
    await sleep(400 + Math.random() * 300);
    await relay.cut();
    await sleep(300 + Math.random() * 500);
    await relay.restore();
  }
  stop = true;
  await Promise.all(workers);

  t.ok((failures.get('connection') ?? 0) > 0, `transactions failed with connection errors during the cuts (${failures.get('connection')})`);
  t.same([...failures.keys()].filter((k) => k !== 'connection'), [], 'and with nothing else');
  // A pool that kept handing out dead connections would leave these hanging until TCP gives up
  // (minutes, past the file's timeout) or failing then; how fast they answer is the bench's.
  const answers = await Promise.all(Array.from({ length: 8 }, () => db.sql`select n from counter`));
  t.equal(answers.length, 8, '8 queries at once right after the last restore all answered, none on a dead connection');
  // A transaction whose COMMIT went through but whose answer was cut reports a failure: the
  // counter may be ahead of the commits reported, by at most the failures, never behind.
  const n = Number(answers[0]![0]!.n);
  const lost = failures.get('connection') ?? 0;
  t.ok(n >= committed && n <= committed + lost, `the counter (${n}) holds every reported commit (${committed}), and at most ${lost} unreported ones`);
});
