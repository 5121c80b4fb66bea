// Settling credits and mending what faults left: a finished conversion is charged the credits of
// its completed sources (failed ones cost nothing) and the rest of its reservation is released;
// the gate is told after the commit. The mending sweep (run by ConversionService.start) settles
// conversions whose settle was lost, audits the gate against the ledger, resolves blobs a
// crash left in pending/ and moves up the active accounts' ledger checkpoints.
import { checkpointBalance, type Settlement } from '../billing/ledger.js';
import type { ConversionContext } from './context.js';
import { LEASE_S } from './queue.js';

/** How long a blob may wait in pending/ before the sweep decides by its rows: far longer than
 *  any transaction, including a job's outcome retried for its whole lease (recording). */
export const PENDING_GRACE_MS = Math.max(30_000, 3 * LEASE_S * 1000);

/** Settles what lost its settle, then audits the gate; says what it mended. */
export async function sweep(ctx: ConversionContext): Promise<void> {
  const settled = await settleLost(ctx);
  if (settled > 0) ctx.billing.onMend?.('settled conversions whose settle was lost', { conversions: settled });
  const a = await ctx.audit.run();
  if (a.settled + a.released + a.adopted + a.adjusted > 0) ctx.billing.onMend?.('gate reservations brought in line with the ledger', { ...a });
  const b = await resolvePending(ctx);
  if (b.placed + b.removed > 0) ctx.billing.onMend?.('blobs left pending by a crash resolved by their rows', { ...b });
  await checkpointActive(ctx);
}

/** Moves up the ledger checkpoints of the accounts active in this process (the ones the audit
 *  watches), so that reading a balance (ledgerBalance) stays a short read of the latest rows. */
async function checkpointActive(ctx: ConversionContext): Promise<void> {
  for (const accountId of ctx.audit.watching?.() ?? []) await checkpointBalance(ctx.sql, accountId);
}

/**
 * Charges the completed sources' credits (0 when the conversion is gone) and releases the rest.
 * Call it once every source of the conversion is done, from whichever process finished the
 * last one; calling it again (a retried job) changes nothing. Render conversions hold nothing.
 */
export async function settleCredits(ctx: ConversionContext, accountId: string, conversionId: string): Promise<void> {
  const [row] = await ctx.sql`select coalesce(sum(credits), 0)::int as charged from files
    where conversion_id = ${conversionId} and role = 'source' and status = 'completed'`;
  try {
    await ctx.billing.ledger.settle(accountId, conversionId, Number(row!.charged));
  } catch (err) {
    // The ledger may have settled and only the gate not heard: let the audit look at this account.
    ctx.audit.watch(accountId);
    throw err;
  }
}

/** Tells the gate a settlement committed with the rows; when that is lost, the audit mends it.
 *  The available balance after it, when the gate answered one. */
export async function tellGate(ctx: ConversionContext, accountId: string, conversionId: string, s: Settlement): Promise<number | undefined> {
  return ctx.billing.ledger.tell(accountId, conversionId, s).catch((err: unknown) => {
    ctx.audit.watch(accountId);
    ctx.billing.onError?.(err, `settling ${conversionId}`);
    return undefined;
  });
}

/** Settles finished conversions whose settle was lost (their process died right after). */
export async function settleLost(ctx: ConversionContext): Promise<number> {
  const rows = await ctx.sql`
    select c.id, c.account_id from conversions c
    where c.operation = 'parse' and c.settled_at is null
      and c.completed_at is not null and c.completed_at < now() - interval '5 seconds'
      and exists (select 1 from ledger l where l.conversion_id = c.id and l.kind = 'reserve')
      and not exists (select 1 from ledger l where l.conversion_id = c.id and l.kind = 'release')
    limit 100`;
  for (const r of rows) await settleCredits(ctx, r.account_id as string, r.id as string);
  return rows.length;
}

/** Places or removes blobs (of conversions and uploads) left in pending/ by a crash or a lost
 *  commit answer. */
export async function resolvePending(ctx: ConversionContext, graceMs = PENDING_GRACE_MS): Promise<{ placed: number; removed: number }> {
  return ctx.blobs.resolvePending(graceMs, async (names) => {
    const rows = await ctx.sql`
      select blob from files where blob in ${ctx.sql(names)}
      union all select blob from uploads where blob in ${ctx.sql(names)}
      union all select blob from upload_parts where blob in ${ctx.sql(names)}`;
    return new Set(rows.map((r) => r.blob as string));
  });
}
