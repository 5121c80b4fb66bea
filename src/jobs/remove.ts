// Deleting a conversion: its rows, the reservation it may still hold, its running work and its
// blobs, in the order remove() below explains.
import { isDependencyDown } from '../errors.js';
import { settleRows, type Settlement } from '../billing/ledger.js';
import type { Sql } from '../store/db.js';
import { getConversionRow, deleteConversionRows } from '../store/conversions.js';
import type { ConversionContext } from './context.js';

/** Deletes a conversion; running work is cancelled and a reservation it still holds is
 *  released (a conversion deleted before it settled is not charged). Its blobs leave their
 *  place before the rows go, and are removed after (see store/blobs.ts). */
export async function remove(ctx: ConversionContext, accountId: string, id: string): Promise<boolean> {
  const row = await getConversionRow(ctx.sql, accountId, id);
  if (!row) return false;
  const named = await ctx.sql`select blob from files where conversion_id = ${id} and account_id = ${accountId} and blob is not null`;
  const moved = await ctx.blobs.unplace(named.map((r) => r.blob as string));
  let deleted: { blobs: string[]; settled?: Settlement } | undefined;
  try {
    // The rows and the release of the reservation go in one transaction: a process that dies
    // right after cannot leave credits reserved for a conversion that no longer exists.
    deleted = await ctx.sql.begin(async (tx) => {
      const t = tx as unknown as Sql;
      const joined = Object.assign(Object.create(null), { begin: (fn: (s: Sql) => unknown) => fn(t) }) as Sql;
      const blobs = await deleteConversionRows(joined, accountId, id);
      if (!blobs) return undefined;
      return { blobs, settled: row.operation === 'render' ? undefined : await settleRows(t, accountId, id, 0) };
    });
  } catch (err) {
    // Not deleted: the blobs go back. Maybe deleted (the commit's answer lost): the pending
    // sweep decides by the rows.
    if (!isDependencyDown(err)) await ctx.blobs.place(moved);
    throw err;
  }
  ctx.runner.abortConversion(id);
  await ctx.blobs.discard(moved);
  if (!deleted) return false; // deleted by another request meanwhile
  // The gate is told after the commit; if that is lost, the gate audit settles it.
  if (deleted.settled) {
    await ctx.billing.ledger.tell(accountId, id, deleted.settled).catch((err: unknown) => {
      ctx.audit.watch(accountId);
      ctx.billing.onError?.(err, `releasing ${id} in the gate`);
    });
  }
  // A large output recorded between the listing and the delete.
  const left = new Set(moved.map((m) => m.name));
  await ctx.blobs.remove(deleted.blobs.filter((b) => !left.has(b)));
  return true;
}
