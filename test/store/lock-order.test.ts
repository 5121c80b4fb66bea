// Transactions that lock a conversion's row and its files' rows take them in one order: the
// conversion first. A job starting its source (startSource) while a client deletes the
// conversion (the delete cascades from the conversion to its files) once locked the other way
// round, and Postgres broke the deadlock by failing the delete: a DELETE answered 500 (seen in a
// full run beside busy loops). Many such pairs run here at once; none may fail.
import t from 'tap';
import { createAccount } from '../../src/store/accounts.js';
import { deleteConversionRows, startSource } from '../../src/store/conversions.js';
import { insertOnePdf, ownStore } from '../helpers/world.js';

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

t.test('starting a source and deleting its conversion at the same moment never deadlock', async (t) => {
  const db = await ownStore(t, 'lock-order', 16);
  const account = await createAccount(db.sql, { name: 'lock-order', plan: 'pro' });

  const failures: string[] = [];
  let deleted = 0;
  for (let round = 0; round < 40; round++) {
    const pairs = await Promise.all(Array.from({ length: 6 }, () => insertOnePdf(db.sql, account.id, 'queued')));
    // The delete starts first and the start of the source a few turns of the event loop later,
    // a different number for each pair: one of them lands the delete between the start's two
    // statements, where the old order deadlocked.
    const outcomes = await Promise.allSettled(pairs.flatMap(({ id, sourceId }, i) => [
      deleteConversionRows(db.sql, account.id, id).then((blobs) => { if (blobs) deleted++; }),
      turns(i + (round % 3)).then(() => startSource(db.sql, id, sourceId)),
    ]));
    for (const o of outcomes) if (o.status === 'rejected') failures.push((o.reason as Error).message);
  }
  t.same(failures, [], 'no transaction failed (no deadlock)');
  t.equal(deleted, 240, 'every conversion was deleted');
});
