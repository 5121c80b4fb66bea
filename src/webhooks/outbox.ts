// The webhook outbox. enqueueConversionEvent is called inside the transaction that makes a
// conversion terminal (jobs/finish.ts), so an event exists if and only if that
// status change committed. It writes the event (its exact JSON body, built now: every retry sends
// the same bytes) and one pending delivery per enabled endpoint of the account subscribed to the
// event type; with no such endpoint it writes nothing. Dispatchers in this process are woken.
// The Conversion in the event is the one GET shows, its `credits_remaining` the balance as the
// ledger stands in that transaction (the conversion's own charge included), read from the
// account's checkpoint and the rows since (ledgerBalance), not its whole history.
import type { Sql } from '../store/db.js';
import { newId } from '../store/ids.js';
import { conversionParts, isTerminal, type ConversionRow, type ConversionStatus } from '../store/conversions.js';
import { ledgerBalance } from '../billing/ledger.js';
import { conversionJson } from '../store/conversion-json.js';

export const EVENT_TYPES = ['conversion.completed', 'conversion.failed'] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/** Sent only by POST /v1/webhooks/{id}/test, whatever the endpoint subscribes to. */
export const TEST_EVENT_TYPE = 'webhook.test';

/** completed_with_errors is reported as conversion.completed (DESIGN.md §7). */
export function eventTypeOf(status: ConversionStatus): EventType {
  return status === 'failed' ? 'conversion.failed' : 'conversion.completed';
}

export interface EventEnvelope {
  id: string;
  type: string;
  created_at: string;
  data: { object: unknown };
}

export function eventBody(id: string, type: string, createdAt: Date, object: unknown): string {
  const envelope: EventEnvelope = { id, type, created_at: createdAt.toISOString(), data: { object } };
  return JSON.stringify(envelope);
}

/** The enabled endpoints of an account that subscribe to the event of a conversion ending so. */
export function subscribedEndpoints(tx: Sql, accountId: string, status: ConversionStatus) {
  return tx`select id from webhook_endpoints
    where account_id = ${accountId} and status = 'enabled' and ${eventTypeOf(status)} = any(event_types)`;
}

/**
 * Returns the event id, or undefined when no endpoint wants it. A caller that has just ended the
 * conversion knows its account and status, and may have read its subscribers already
 * (`endpoints`, sent with its own statements).
 */
export async function enqueueConversionEvent(tx: Sql, conversionId: string,
  known?: { accountId: string; status: ConversionStatus; endpoints?: readonly Record<string, unknown>[] }): Promise<string | undefined> {
  // An account with no subscriber costs one statement (or none), and the row is read only for an
  // event to write.
  if (known && !isTerminal(known.status)) return undefined;
  const listeners = subscribedEndpoints.bind(null, tx);
  let endpoints = known ? known.endpoints ?? await listeners(known.accountId, known.status) : undefined;
  if (endpoints?.length === 0) return undefined;
  const [row] = await tx`select * from conversions where id = ${conversionId}`;
  const conv = row as ConversionRow | undefined;
  if (!conv || !isTerminal(conv.status)) return undefined;
  const type = eventTypeOf(conv.status);
  endpoints ??= await listeners(conv.account_id, conv.status);
  if (endpoints.length === 0) return undefined;
  const id = newId('evt');
  const createdAt = new Date();
  const parts = await conversionParts(tx, conv, { after: -1, withContent: false });
  const body = eventBody(id, type, createdAt, conversionJson(parts, (await ledgerBalance(tx, conv.account_id)).balance));
  await tx`insert into webhook_events (id, account_id, type, conversion_id, body, created_at)
           values (${id}, ${conv.account_id}, ${type}, ${conv.id}, ${body}, ${createdAt})`;
  const ids = endpoints.map((e) => e.id as string);
  await tx`insert into webhook_deliveries (endpoint_id, event_id, next_attempt_at)
           select e.id, ${id}, now() from webhook_endpoints e where e.id = any(${tx.array(ids)})`;
  // The transaction has not committed yet: a woken dispatcher re-checks a few times (dispatcher.ts).
  for (const wake of wakers) wake();
  return id;
}

const wakers = new Set<() => void>();

/** Calls `fn` whenever this process enqueues an event; returns the unsubscribe function. */
export function onEnqueue(fn: () => void): () => void {
  wakers.add(fn);
  return () => wakers.delete(fn);
}
