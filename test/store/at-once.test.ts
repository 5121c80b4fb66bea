// A transaction sent whole (store/db.ts atOnce): the statements' results come back in order, and
// with `waitForDisk: false` its commit does not wait for the WAL flush (a job's marks and
// progress) while the connection's other transactions still do. On Postgres and on the embedded
// database alike. Once answered, the statements hold none of their values (the driver's query
// objects were found to outlive their batch, each request's Markdown with them).
import t, { type Test } from 'tap';
import { atOnce, type Db } from '../../src/store/db.js';
import { ownStore } from '../helpers/world.js';

const setting = (rows: unknown): string => (rows as Array<{ s: string }>)[0]!.s;

async function commits(t: Test, db: Db): Promise<void> {
  const [first, second] = await atOnce(db.sql, (q) => [
    q`select current_setting('synchronous_commit') as s`.execute(),
    q`select 2 as s`.execute(),
  ]);
  t.equal(setting(first), 'on', 'a transaction waits for the disk unless told otherwise');
  t.same(second, [{ s: 2 }], 'results in the order of the statements');
  const current = (q: Db['sql']) => [q`select current_setting('synchronous_commit') as s`.execute()];
  const [inside] = await atOnce(db.sql, current, { waitForDisk: false });
  t.equal(setting(inside), 'off', 'waitForDisk: false commits without waiting for the disk');
  const after = await Promise.all(Array.from({ length: 4 }, () => atOnce(db.sql, current)));
  t.same(after.map(([r]) => setting(r)), ['on', 'on', 'on', 'on'], 'only that transaction: its connection waits again after it');
}

/** The driver's query as atOnce empties it. */
interface HeldValues { args?: unknown[]; parameters?: unknown[] }

t.test('on Postgres', async (t) => {
  const db = await ownStore(t, 'atonce', 2);
  await commits(t, db);
  const made: HeldValues[] = [];
  let heldAtFirst = 0;
  const [echoed] = await atOnce(db.sql, (q) => {
    const s = q`select ${'a value of this batch'}::text as s`.execute();
    made.push(s as unknown as HeldValues);
    heldAtFirst = made[0]!.args?.length ?? 0;
    return [s];
  });
  t.same(echoed, [{ s: 'a value of this batch' }], 'the statement ran with its value');
  t.equal(heldAtFirst, 1, 'the driver\'s query held the value it was made with');
  t.same(made[0]!.args, [], 'and holds no value once answered');
  t.same(made[0]!.parameters, [], 'nor what it sent');
});

t.test('on the embedded database', async (t) => {
  await commits(t, await ownStore(t, 'atonce', 1, 'embedded'));
});
