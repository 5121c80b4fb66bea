// The one place a source's outcome is recorded (store/conversions.ts recordSourceOutcome) and,
// when that outcome ends its conversion, what ends with it in the same transaction: the credits
// settled and the webhook event in the outbox, so that the status change, the charge and the event
// commit together or not at all.
import type { Sql } from '../store/db.js';
import { recordSourceOutcome, type RolledUp } from '../store/conversions.js';
import { enqueueConversionEvent } from '../webhooks/outbox.js';

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
  return recordSourceOutcome(sql, conv, sourceId, outcome, guard, async (tx, charged, status) => {
    await settle?.(tx, charged);
    await enqueueConversionEvent(tx, conv.id, { accountId: conv.accountId, status });
  });
}
