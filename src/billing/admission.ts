// What a submit must pass before it may reserve credits (DESIGN.md §2, §5): the plan's limits
// (checked at submit, never at estimate) and the Idempotency-Key, both as its header and as the
// durable claim in Postgres that backs the gate's claim in Redis.
//
// Limits decided here: the monthly allowance counts the source files submitted this calendar
// month (UTC), of every kind, in a counter that deletes and retention do not lower; it is read
// before the reservation (fast refusal) and enforced again in the insert transaction (exact under
// concurrency). Storage counts the bytes of every file kept with store: true (sources and
// outputs); it is read before the reservation only, so concurrent stored submits of one account
// may overshoot it by the requests in flight.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { ApiError } from '../errors.js';
import type { Sql } from '../store/db.js';
import type { PlanOverrides } from '../config.js';
import { planLimits, type Plan, type PlanLimits } from '../plans.js';

export const IDEMPOTENCY_TTL_S = 24 * 60 * 60;
export const IDEMPOTENCY_KEY_MAX = 255;

export function limitsFor(plan: Plan, overrides: PlanOverrides): PlanLimits {
  return { ...planLimits(plan), ...overrides[plan] };
}

export interface SizedSource {
  name: string;
  bytes: number;
  pages?: number;
}

/** 413 file_too_large: needs only the received sizes, so it runs before anything is read. */
export function checkFileSizes(sources: SizedSource[], limits: PlanLimits): void {
  const big = sources.find((s) => s.bytes > limits.fileBytes);
  if (big) {
    throw new ApiError('file_too_large', `"${big.name}" is ${big.bytes} bytes; the plan allows ${limits.fileBytes} per file.`);
  }
}

/**
 * 422 page_cap_exceeded, then 403 upload_limit_exceeded and storage_limit_exceeded. The monthly
 * read is a fast refusal before credits are reserved; a submit that reserves nothing (a render)
 * skips it, as its insert enforces the allowance exactly anyway.
 */
export async function checkPlanLimits(sql: Sql, accountId: string, limits: PlanLimits,
  sources: Array<SizedSource & { pages: number }>, store: boolean, reserves = true): Promise<void> {
  const long = sources.find((s) => s.pages > limits.pageCap);
  if (long) {
    throw new ApiError('page_cap_exceeded', `"${long.name}" has ${long.pages} pages; the plan allows ${limits.pageCap} per file.`);
  }
  if (!reserves && !store) return;
  // The library's sum only when storing: under a CASE in one statement, Postgres planned it with
  // its parameters for about 0.2 ms at every call, the sum skipped or not (B's submits, which
  // store nothing, spent more planning it than running it). Each form is its own statement.
  const stored = store
    ? sql`(select coalesce(sum(bytes), 0) from files where account_id = ${accountId} and expires_at is null)::text`
    : sql`'0'`;
  const [u] = await sql`
    select coalesce((select files from monthly_usage where account_id = ${accountId}
              and month = ${sql.unsafe(THIS_MONTH)}), 0) as month_files,
           ${stored} as stored`;
  const monthFiles = Number(u!.month_files);
  if (monthFiles + sources.length > limits.filesPerMonth) {
    throw monthlyLimit(monthFiles, sources.length, limits.filesPerMonth);
  }
  if (store) {
    const stored = Number(u!.stored);
    const adding = sources.reduce((a, s) => a + s.bytes, 0);
    if (stored + adding > limits.storageBytes) {
      throw new ApiError('storage_limit_exceeded',
        `The library holds ${stored} bytes; storing ${adding} more would pass the plan's ${limits.storageBytes}.`);
    }
  }
}

/** This month in UTC, as the monthly counters are keyed (SQL). */
export const THIS_MONTH = "date_trunc('month', now() at time zone 'utc')::date";

/** The refusal of `adding` files more when `used` of the month's `limit` are taken. */
export function monthlyLimit(used: number, adding: number, limit: number): ApiError {
  return new ApiError('upload_limit_exceeded',
    `${used} files were submitted this month; ${adding} more would pass the plan's ${limit}.`);
}

/** Counts `files` more against this month's allowance, inside the conversion's insert
 *  transaction; 403 upload_limit_exceeded (rolling it back) when they no longer fit. */
export async function countMonthlyFiles(tx: Sql, accountId: string, files: number, limit: number): Promise<void> {
  const rows = await tx`
    insert into monthly_usage as u (account_id, month, files)
    values (${accountId}, ${tx.unsafe(THIS_MONTH)}, ${files})
    on conflict (account_id, month) do update set files = u.files + excluded.files
      where u.files + excluded.files <= ${limit}
    returning files`;
  if (rows.length === 0 || (rows[0]!.files as number) > limit) {
    const [u] = await tx`select files from monthly_usage where account_id = ${accountId}
                         and month = ${tx.unsafe(THIS_MONTH)}`;
    throw monthlyLimit(Number(u?.files ?? 0), files, limit);
  }
}

/** The Idempotency-Key header, if sent: 1–255 characters, else 400. */
export function idempotencyKeyOf(headers: Record<string, string>): string | undefined {
  const key = headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (key.length < 1 || key.length > IDEMPOTENCY_KEY_MAX) {
    throw new ApiError('invalid_request', `Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX} characters long.`);
  }
  return key;
}

/** JSON with object keys sorted, so that equal values always print the same. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).filter((k) => o[k] !== undefined).sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(path).on('data', (d) => h.update(d)).on('error', reject).on('end', () => resolve(h.digest('hex')));
  });
}

/** SHA-256 over method, path, the parsed options, metadata and each source's bytes in order
 *  (read from its file, or from memory for a source held there). */
export async function requestFingerprint(method: string, path: string, options: unknown, metadata: unknown,
  sources: Array<{ path: string; data?: Buffer }>): Promise<string> {
  const h = createHash('sha256');
  h.update(canonical([method, path, options, metadata ?? null]));
  for (const s of sources) {
    const digest = s.data ? createHash('sha256').update(s.data).digest('hex') : await sha256File(s.path);
    h.update(`\n${digest}`);
  }
  return h.digest('hex');
}

export interface IdempotencyClaimRow {
  accountId: string;
  endpoint: string;
  key: string;
  fingerprint: string;
  conversionId: string;
}

/** Claims the key inside the conversion's insert transaction; false when a live claim holds it.
 *  A concurrent claimer of the same key waits here until the first transaction ends. */
export async function claimKey(tx: Sql, c: IdempotencyClaimRow): Promise<boolean> {
  const rows = await tx`${insertClaims(tx, [c])} returning conversion_id`;
  return rows.length === 1;
}

/**
 * Inserts `claims` in the order given (callers claiming several keys sort them, so that two
 * transactions claiming the same keys wait for each other instead of deadlocking). A claim past
 * its lifetime is taken over; a key held by a live claim is left as it is, and its row is not in
 * what a `returning` added by the caller gives back.
 */
export function insertClaims(tx: Sql, claims: readonly IdempotencyClaimRow[]) {
  return tx`insert into idempotency_keys (account_id, endpoint, key, fingerprint, conversion_id)
    select unnest(${tx.array(claims.map((c) => c.accountId))}::text[]), unnest(${tx.array(claims.map((c) => c.endpoint))}::text[]),
      unnest(${tx.array(claims.map((c) => c.key))}::text[]), unnest(${tx.array(claims.map((c) => c.fingerprint))}::text[]),
      unnest(${tx.array(claims.map((c) => c.conversionId))}::text[])
    on conflict (account_id, endpoint, key) do update
      set fingerprint = excluded.fingerprint, conversion_id = excluded.conversion_id, created_at = now()
      where idempotency_keys.created_at < now() - make_interval(secs => ${IDEMPOTENCY_TTL_S})`;
}

/** The live claim of a key, if any. */
export async function findClaim(sql: Sql, accountId: string, endpoint: string, key: string)
  : Promise<{ fingerprint: string; conversionId: string } | undefined> {
  const [row] = await sql`select fingerprint, conversion_id from idempotency_keys
    where account_id = ${accountId} and endpoint = ${endpoint} and key = ${key}
      and created_at >= now() - make_interval(secs => ${IDEMPOTENCY_TTL_S})`;
  return row ? { fingerprint: row.fingerprint as string, conversionId: row.conversion_id as string } : undefined;
}

/** Polls for a live claim of the key for up to `ms`: its first request may still be committing. */
export async function awaitClaim(sql: Sql, accountId: string, endpoint: string, key: string, ms: number)
  : Promise<{ fingerprint: string; conversionId: string } | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await findClaim(sql, accountId, endpoint, key);
    if (found || Date.now() >= deadline) return found;
    await new Promise((r) => setTimeout(r, 25));
  }
}
