// Recording a source's outcome sends the guard, the lock, the writes and the roll-up together
// (store/db.ts pipelined): the writes go out before the guard has answered. A guard that refuses
// (another process holds the job now) must leave nothing behind: no output rows, the source and
// the conversion as they were, no terminal callback, and the connection usable afterwards. A job
// whose conversion was deleted meanwhile is refused, not failed, and leaves no output behind.
import t from 'tap';
import type { Sql } from '../../src/store/db.js';
import { createAccount } from '../../src/store/accounts.js';
import { deleteConversionRows, recordSourceOutcome, type NewFile } from '../../src/store/conversions.js';
import { newId } from '../../src/store/ids.js';
import { insertOnePdf, ownStore } from '../helpers/world.js';

t.test('an outcome refused by its guard writes nothing', async (t) => {
  // Two connections: a reserved one that were never handed back would stall the second test.
  const db = await ownStore(t, 'record-outcome', 2);
  const account = await createAccount(db.sql, { name: 'record-outcome', plan: 'pro' });

  const conversion = async () => {
    const { id, sourceId } = await insertOnePdf(db.sql, account.id, 'running');
    return { conv: { id, accountId: account.id, expiresAt: null }, sourceId };
  };
  const output = (sourceId: string): NewFile => ({
    id: newId('file'), position: 1, role: 'output', sourceId, name: 'a.md', mime: 'text/markdown', status: 'completed',
    format: 'markdown', bytes: 5, pages: 1, content: 'hello',
  });
  const refuse = (): Promise<boolean> => Promise.resolve(false);
  const accept = (tx: Sql): Promise<boolean> => tx`select 1`.execute().then(() => true);
  let ended = 0;
  const onTerminal = async (): Promise<void> => { ended++; };

  await t.test('refused: no output, the source and the conversion unchanged', async (t) => {
    const { conv, sourceId } = await conversion();
    const got = await recordSourceOutcome(db.sql, conv, sourceId, { outputs: [output(sourceId)], pages: 1, credits: 1 }, refuse, onTerminal);
    t.equal(got, null, 'refused');
    const files = await db.sql`select role, status from files where conversion_id = ${conv.id} order by position`;
    t.same(files.map((f) => [f.role, f.status]), [['source', 'running']], 'no output row, the source still running');
    const [c] = await db.sql`select status, completed_at from conversions where id = ${conv.id}`;
    t.same([c!.status, c!.completed_at], ['queued', null], 'the conversion not rolled up');
    t.equal(ended, 0, 'nothing ended');
  });

  await t.test('refused after the conversion was deleted: null, not the writes\' errors', async (t) => {
    const { conv, sourceId } = await conversion();
    await deleteConversionRows(db.sql, account.id, conv.id);
    const got = await recordSourceOutcome(db.sql, conv, sourceId, { outputs: [output(sourceId)], pages: 1, credits: 1 }, refuse, onTerminal);
    t.equal(got, null);
    const [n] = await db.sql`select count(*)::int as n from files where conversion_id = ${conv.id}`;
    t.equal(n!.n, 0, 'no orphan output');
  });

  await t.test('accepted after the conversion was deleted: null, and no orphan output', async (t) => {
    // Files have no foreign key on their conversion (migration 0015): the missing row the lock
    // finds is what refuses the outcome.
    const { conv, sourceId } = await conversion();
    await deleteConversionRows(db.sql, account.id, conv.id);
    const got = await recordSourceOutcome(db.sql, conv, sourceId, { outputs: [output(sourceId)], pages: 1, credits: 1 }, accept, onTerminal);
    t.equal(got, null);
    const [n] = await db.sql`select count(*)::int as n from files where conversion_id = ${conv.id}`;
    t.equal(n!.n, 0, 'no orphan output, and the source went with its conversion');
    t.equal(ended, 0, 'nothing ended');
  });

  await t.test('an account deleted takes its conversions and their files', async (t) => {
    const other = await createAccount(db.sql, { name: 'record-outcome-gone', plan: 'pro' });
    const { id } = await insertOnePdf(db.sql, other.id, 'running');
    const [before] = await db.sql`select count(*)::int as n from files where conversion_id = ${id}`;
    t.equal(before!.n, 1, 'the source stored');
    await db.sql`delete from accounts where id = ${other.id}`;
    const [after] = await db.sql`select count(*)::int as n from files where account_id = ${other.id} or conversion_id = ${id}`;
    t.equal(after!.n, 0, 'no file left of the account');
  });

  await t.test('accepted: the output, the source completed, the conversion ended once', async (t) => {
    const { conv, sourceId } = await conversion();
    const got = await recordSourceOutcome(db.sql, conv, sourceId, { outputs: [output(sourceId)], pages: 1, credits: 1 }, accept, onTerminal);
    t.equal(got?.status, 'completed');
    t.equal(got?.charged, 1);
    const files = await db.sql`select role, status, content from files where conversion_id = ${conv.id} order by position`;
    t.same(files.map((f) => [f.role, f.status, f.content]), [['source', 'completed', null], ['output', 'completed', 'hello']]);
    t.equal(ended, 1, 'the terminal step ran once, in the transaction');
  });
});
