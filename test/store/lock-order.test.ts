// Transactions that lock a conversion's row and its files' rows take them in one order: the
// conversion first. A job starting its source (startSource) while a client deletes the
// conversion (the delete cascades from the conversion to its files) once locked the other way
// round, and Postgres broke the deadlock by failing the delete: a DELETE answered 500 (seen in a
// full run beside busy loops). Many such pairs run here at once; none may fail.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { openDb } from '../../src/store/db.js';
import { createAccount } from '../../src/store/accounts.js';
import { deleteConversionRows, insertConversion, startSource } from '../../src/store/conversions.js';
import { newId } from '../../src/store/ids.js';
import { dropSchema, PG_URL } from '../helpers/world.js';

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

t.test('starting a source and deleting its conversion at the same moment never deadlock', async (t) => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-lock-order-'));
  const db = await openDb({ databaseUrl: PG_URL, schema, dataDir, max: 16 });
  t.teardown(async () => { await db.close(); await dropSchema(schema); rmSync(dataDir, { recursive: true, force: true }); });
  const account = await createAccount(db.sql, { name: 'lock-order', plan: 'pro' });

  const failures: string[] = [];
  let deleted = 0;
  for (let round = 0; round < 40; round++) {
    const pairs = await Promise.all(Array.from({ length: 6 }, async () => {
      const id = newId('conv');
      const sourceId = newId('file');
      await insertConversion(db.sql, {
        id, accountId: account.id, name: 'a.pdf', endpoint: 'pdf', operation: 'parse', options: {}, metadata: null,
        store: false, createdAt: new Date(), expiresAt: null, creditsReserved: 0,
      }, [{ id: sourceId, position: 0, role: 'source', name: 'a.pdf', mime: 'application/pdf', status: 'queued', bytes: 1 }]);
      return { id, sourceId };
    }));
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
