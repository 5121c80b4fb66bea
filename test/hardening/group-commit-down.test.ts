// Group commit while Postgres is away: the waiting renders fail together, at once, instead of
// one transaction per render after the batch failed (each of those fails the same way, so the
// last request waited for all the others' connection attempts: refusals took seconds).
import t from 'tap';
import { dbBehindRelay } from '../helpers/db-relay.js';
import { isDependencyDown } from '../../src/errors.js';
import type { Sql } from '../../src/store/db.js';
import { GroupCommit, type FinishedConversion } from '../../src/jobs/group-commit.js';
import type { ConversionRow } from '../../src/store/conversions.js';
import { createAccount } from '../../src/store/accounts.js';

function finished(i: number, accountId: string): FinishedConversion {
  const now = new Date();
  const row: ConversionRow = {
    id: `conv_down${i}`, account_id: accountId, name: 'markdown/html', operation: 'render', status: 'completed',
    async_reason: null, options: {}, metadata: null, store: false, credits_reserved: 0, credits_charged: 0,
    created_at: now, completed_at: now, expires_at: null,
  };
  return { row, files: [], monthlyFiles: 1, monthlyLimit: 1000 };
}

t.test('renders waiting for a group commit fail together, at once, while Postgres is down', async (t) => {
  const { db, relay } = await dbBehindRelay(t);

  // The real client, with its transactions counted: a batch is sent on a reserved connection
  // (all at once), or in a transaction of the driver (the careful path).
  let transactions = 0;
  const counted = new Proxy(db.sql, {
    get(target, prop, receiver) {
      if (prop === 'begin' || prop === 'reserve') {
        const method = target[prop] as (...a: unknown[]) => unknown;
        return (...args: unknown[]) => { transactions++; return method.apply(target, args); };
      }
      return Reflect.get(target, prop, receiver);
    },
  }) as Sql;
  const group = new GroupCommit(counted);
  const { id: accountId } = await createAccount(db.sql, { name: 'Down', plan: 'lite' });

  await relay.cut();
  const outcomes = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => group.add(finished(i, accountId))));
  const reasons = outcomes.map((o) => (o.status === 'rejected' ? o.reason : null));
  t.ok(reasons.every((r) => r !== null && isDependencyDown(r)), 'every render is refused as a dependency failure (503)');
  // The first render flushes alone (it starts the flush), the other seven wait for the next
  // transaction together; retried one by one they would take 1 + 1 + 7.
  t.equal(transactions, 2, 'two transactions tried, none per render');

  await relay.restore();
  await group.add(finished(100, accountId));
  const [stored] = await db.sql`select count(*)::int as n from conversions where account_id = ${accountId}`;
  t.equal(stored!.n, 1, 'once Postgres is back the next render is stored');
});
