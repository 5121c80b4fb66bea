// Webhook rows: endpoints (create, list, delete, disable), the claim of due deliveries and the
// record of each attempt. Times are the database's (now()), so processes with skewed clocks
// agree on what is due.
import type { Sql } from '../store/db.js';
import { newId } from '../store/ids.js';
import { newSecret } from './sign.js';

export interface EndpointRow {
  id: string;
  account_id: string;
  url: string;
  event_types: string[];
  secret: string;
  status: 'enabled' | 'disabled';
  disabled_reason: string | null;
  created_at: Date;
}

/** The endpoint as the API shows it; the secret only on creation. */
export function endpointJson(e: EndpointRow, withSecret = false): Record<string, unknown> {
  return {
    id: e.id,
    object: 'webhook_endpoint',
    url: e.url,
    eventTypes: e.event_types,
    ...(withSecret ? { secret: e.secret } : {}),
    status: e.status,
    disabled_reason: e.disabled_reason,
    created_at: e.created_at.toISOString(),
  };
}

export async function createEndpoint(sql: Sql, accountId: string, url: string, eventTypes: string[]): Promise<EndpointRow> {
  const [row] = await sql`insert into webhook_endpoints (id, account_id, url, event_types, secret)
    values (${newId('wh')}, ${accountId}, ${url}, ${sql.array(eventTypes)}, ${newSecret()}) returning *`;
  return row as EndpointRow;
}

export async function countEndpoints(sql: Sql, accountId: string): Promise<number> {
  const [row] = await sql`select count(*)::int as n from webhook_endpoints where account_id = ${accountId}`;
  return row!.n as number;
}

export async function listEndpoints(sql: Sql, accountId: string): Promise<EndpointRow[]> {
  return await sql`select * from webhook_endpoints where account_id = ${accountId}
                   order by created_at, id` as unknown as EndpointRow[];
}

export async function getEndpoint(sql: Sql, accountId: string, id: string): Promise<EndpointRow | undefined> {
  const [row] = await sql`select * from webhook_endpoints where id = ${id} and account_id = ${accountId}`;
  return row as EndpointRow | undefined;
}

/** Deletes the endpoint with its pending deliveries and attempt log. */
export async function deleteEndpoint(sql: Sql, accountId: string, id: string): Promise<boolean> {
  const gone = await sql`delete from webhook_endpoints where id = ${id} and account_id = ${accountId} returning id`;
  return gone.length === 1;
}

export interface Claimed {
  deliveryId: string;
  attempt: number;
  endpointId: string;
  url: string;
  secret: string;
  eventId: string;
  eventType: string;
  body: string;
}

/**
 * Takes up to `limit` due deliveries of enabled endpoints. Each is leased by pushing its
 * next_attempt_at `leaseMs` ahead and counting the attempt: if this process dies before
 * recording the outcome, another takes it once the lease runs out (and resends it).
 */
export async function claimDue(sql: Sql, limit: number, leaseMs: number): Promise<Claimed[]> {
  const rows = await sql`
    with due as (
      select d.id from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
      where d.status = 'pending' and d.next_attempt_at <= now() and e.status = 'enabled'
      order by d.next_attempt_at limit ${limit}
      for update of d skip locked)
    update webhook_deliveries d
    set attempts = d.attempts + 1, next_attempt_at = now() + ${leaseMs}::float8 * interval '1 millisecond', updated_at = now()
    from due, webhook_endpoints e, webhook_events ev
    where d.id = due.id and e.id = d.endpoint_id and ev.id = d.event_id
    returning d.id::text as "deliveryId", d.attempts as attempt, e.id as "endpointId", e.url, e.secret,
              ev.id as "eventId", ev.type as "eventType", ev.body`;
  return rows as unknown as Claimed[];
}

/** Milliseconds until the next pending delivery is due (0 if overdue), or null when none is. */
export async function msUntilNextDue(sql: Sql): Promise<number | null> {
  // Not greatest(0, …) in SQL: greatest ignores a NULL, so "none pending" came back as 0, "due
  // now", and an idle dispatcher polled without pause (hundreds of ticks a second).
  const [row] = await sql`
    select (extract(epoch from (min(d.next_attempt_at) - now())) * 1000)::float8 as ms
    from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
    where d.status = 'pending' and e.status = 'enabled'`;
  return row?.ms === null || row?.ms === undefined ? null : Math.max(0, Number(row.ms));
}

export interface AttemptOutcome {
  ok: boolean;
  responseStatus: number | null;
  latencyMs: number;
  error: string | null;
}

/**
 * Records one try of a claimed delivery. `retryInMs` null means no further try: delivered when
 * ok, else failed. `disable` also disables the endpoint (410 Gone) and fails its other pending
 * deliveries. A stale claim (another process re-leased it since) only adds to the log.
 */
export async function recordAttempt(
  sql: Sql, c: Claimed, out: AttemptOutcome, retryInMs: number | null, disable?: string,
): Promise<void> {
  await sql.begin(async (tx) => {
    const t = tx as unknown as Sql;
    const status = out.ok ? 'delivered' : retryInMs === null ? 'failed' : 'pending';
    const [d] = await t`update webhook_deliveries set status = ${status}, updated_at = now(),
        next_attempt_at = case when ${status} = 'pending' then now() + ${retryInMs ?? 0}::float8 * interval '1 millisecond' end
      where id = ${c.deliveryId} and attempts = ${c.attempt} and status = 'pending'
      returning next_attempt_at`;
    // The endpoint may have been deleted during the try: then there is no log to add to.
    await t`insert into webhook_attempts (endpoint_id, event_id, event_type, attempt, status, response_status,
               latency_ms, error, next_retry_at)
             select ${c.endpointId}, ${c.eventId}, ${c.eventType}, ${c.attempt}, ${out.ok ? 'succeeded' : 'failed'},
               ${out.responseStatus}::int, ${Math.round(out.latencyMs)}::int, ${out.error}::text, ${d?.next_attempt_at ?? null}::timestamptz
             where exists (select 1 from webhook_endpoints where id = ${c.endpointId})`;
    if (disable) {
      await t`update webhook_endpoints set status = 'disabled', disabled_reason = ${disable} where id = ${c.endpointId}`;
      await t`update webhook_deliveries set status = 'failed', next_attempt_at = null, updated_at = now()
              where endpoint_id = ${c.endpointId} and status = 'pending'`;
    }
  });
}

export interface AttemptRow {
  id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  status: 'succeeded' | 'failed';
  response_status: number | null;
  latency_ms: number;
  error: string | null;
  next_retry_at: Date | null;
  created_at: Date;
}

/** Newest first, `limit` attempts after the cursor (an attempt id). */
export async function listAttempts(sql: Sql, endpointId: string, limit: number, before?: number): Promise<AttemptRow[]> {
  const rows = await sql`select id::text as id, event_id, event_type, attempt, status, response_status, latency_ms, error,
      next_retry_at, created_at
    from webhook_attempts where endpoint_id = ${endpointId} and id < ${before ?? Number.MAX_SAFE_INTEGER}
    order by webhook_attempts.id desc limit ${limit}`;
  return rows as unknown as AttemptRow[];
}

/** A test event: written to the event table for the log, sent once, never retried. */
export async function insertTestEvent(sql: Sql, accountId: string, id: string, type: string, body: string, createdAt: Date): Promise<void> {
  await sql`insert into webhook_events (id, account_id, type, body, created_at)
            values (${id}, ${accountId}, ${type}, ${body}, ${createdAt})`;
}

export async function logTestAttempt(sql: Sql, endpointId: string, eventId: string, type: string, out: AttemptOutcome): Promise<AttemptRow> {
  const [row] = await sql`insert into webhook_attempts (endpoint_id, event_id, event_type, attempt, status, response_status, latency_ms, error)
    values (${endpointId}, ${eventId}, ${type}, 1, ${out.ok ? 'succeeded' : 'failed'}, ${out.responseStatus},
      ${Math.round(out.latencyMs)}, ${out.error})
    returning id::text as id, event_id, event_type, attempt, status, response_status, latency_ms, error, next_retry_at, created_at`;
  return row as AttemptRow;
}

/** An attempt as GET /v1/webhooks/{id}/deliveries shows it. */
export function attemptJson(a: AttemptRow): Record<string, unknown> {
  return {
    id: `wha_${a.id}`,
    object: 'webhook_attempt',
    event_id: a.event_id,
    event_type: a.event_type,
    attempt: a.attempt,
    status: a.status,
    response_status: a.response_status,
    latency_ms: a.latency_ms,
    error: a.error,
    next_retry_at: a.next_retry_at ? a.next_retry_at.toISOString() : null,
    created_at: a.created_at.toISOString(),
  };
}
