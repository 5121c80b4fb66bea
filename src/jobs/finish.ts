// The one place a source's outcome is recorded (store/conversions.ts recordSourceOutcome) and,
// when that outcome ends its conversion, what ends with it in the same transaction: the credits
// settled and the webhook event in the outbox, so that the status change, the charge and the event
// commit together or not at all.
import type { Sql } from '../store/db.js';
import { recordInTransaction, recordSourceOutcome, type ConversionStatus, type RolledUp } from '../store/conversions.js';
import { enqueueConversionEvent, subscribedEndpoints } from '../webhooks/outbox.js';

export type SourceOutcome = Parameters<typeof recordSourceOutcome>[3];

/**
 * Records `outcome` for source `sourceId` of `conv`; returns the conversion as it left it, or
 * null when `guard` refused. `settle` runs with the credits charged when the conversion ends.
 */
export function finishSource(
  sql: Sql,
  conv: { id: string; accountId: string; expiresAt: Date | null },
  sourceId: string,
  outcome: SourceOutcome,
  guard?: (tx: Sql) => Promise<boolean>,
  settle?: (tx: Sql, charged: number) => Promise<void>,
): Promise<RolledUp | null> {
  return recordSourceOutcome(sql, conv, sourceId, outcome, guard, ending(conv, settle));
}

/** finishSource inside a transaction the caller holds (a source that failed at admission). */
export async function finishSourceIn(
  t: Sql,
  conv: { id: string; accountId: string; expiresAt: Date | null },
  sourceId: string,
  outcome: SourceOutcome,
  settle?: (tx: Sql, charged: number) => Promise<void>,
): Promise<RolledUp> {
  return (await recordInTransaction(t, conv, sourceId, outcome, undefined, ending(conv, settle)))!;
}

/** What ends with the conversion: its credits settled, its webhook event queued. */
function ending(conv: { id: string; accountId: string }, settle?: (tx: Sql, charged: number) => Promise<void>) {
  return async (tx: Sql, charged: number, status: ConversionStatus): Promise<void> => {
    // The subscribers are read with the settlement, in the same round trip (the read does not
    // depend on it); an event, whose body shows the balance, is written after it.
    const [, endpoints] = await Promise.all([settle?.(tx, charged), subscribedEndpoints(tx, conv.accountId, status).execute()]);
    await enqueueConversionEvent(tx, conv.id, { accountId: conv.accountId, status, endpoints });
  };
}
