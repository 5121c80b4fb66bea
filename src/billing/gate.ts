// The billing gate: the one place that decides, atomically, whether a submit may spend credits and
// take a concurrency slot (DESIGN.md §3, §5). Two implementations keep exactly these semantics:
// RedisGate (Lua scripts in ./lua, shared by every process) and LocalGate (embedded, one process).
//
// Contract for callers:
// - The Postgres ledger is the truth; the gate holds a rebuildable copy per account: the available
//   balance (ledger sum, open reservations already subtracted) and the open reservations, which are
//   also the account's running conversions. `reserve` answers `not_loaded` until `load` ran; use
//   `reserveWithRebuild` below rather than writing that loop again.
// - Write the ledger row first, then call `settle`/`release`/`adjust`. Each is exactly-once in the
//   gate; when the account is not loaded they change nothing but mark it so that a rebuild which
//   read the ledger before them is answered `stale` and reads it again.
// - Every reservation must end in `settle` or `release`, or it holds its credits and its slot.
// - Redis must not evict keys (maxmemory-policy noeviction or volatile-*): the money keys carry no
//   TTL and losing one of them alone would corrupt the copy until the next rebuild.

import { ApiError } from '../errors.js';

/** Negative codes the scripts answer with when they refuse. */
export enum Refusal {
  InsufficientCredits = -1,
  ConcurrencyLimited = -2,
  RateLimited = -3,
  IdempotencyKeyReused = -4,
}

/** Seconds a client is told to wait when its account is at its concurrency limit. */
export const CONCURRENCY_RETRY_AFTER_S = 1;
/** The rate-limit window: fixed, 60 s, opened by the first allowed request. */
export const RATE_WINDOW_MS = 60_000;
/** How long a not-loaded account remembers that money moved (only a rebuild's duration matters). */
export const EPOCH_TTL_S = 3_600;
/** Largest credit amount accepted in one call; keeps every sum exact inside Lua's doubles. */
export const MAX_CREDITS = 1e12;

export interface IdempotencyClaim {
  /** Already scoped by the caller: account + endpoint + the client's Idempotency-Key. */
  key: string;
  fingerprint: string;
  ttlSeconds: number;
}

export interface ReserveRequest {
  accountId: string;
  conversionId: string;
  credits: number;
  concurrencyLimit: number;
  idempotency?: IdempotencyClaim;
}

export type GateRefusal =
  | { kind: 'refused'; refusal: Refusal.InsufficientCredits; balance: number; credits: number }
  | { kind: 'refused'; refusal: Refusal.ConcurrencyLimited; running: number; retryAfter: number }
  | { kind: 'refused'; refusal: Refusal.IdempotencyKeyReused }
  | { kind: 'refused'; refusal: Refusal.RateLimited; retryAfter: number };

export type ReserveResult =
  | { kind: 'reserved'; balance: number }
  | { kind: 'replay'; conversionId: string }
  | { kind: 'not_loaded'; epoch: string }
  | Exclude<GateRefusal, { refusal: Refusal.RateLimited }>;

export type SettleResult =
  | { settled: true; reserved: number; charged: number; balance: number }
  | { settled: false; reason: 'not_held' | 'not_loaded' };

export interface LedgerSnapshot {
  /** Available balance: grants − charges − open reservations. */
  balance: number;
  reservations: Array<{ conversionId: string; credits: number }>;
}

export type LoadResult =
  | { kind: 'loaded' }
  | { kind: 'already_loaded' }
  | { kind: 'stale'; epoch: string };

export type AdjustResult = { applied: true; balance: number } | { applied: false };

export type RateResult =
  | { allowed: true; remaining: number; balance: BalanceRead }
  | ({ allowed: false } & Extract<GateRefusal, { refusal: Refusal.RateLimited }>);

export interface Holdings {
  balance: number;
  held: Map<string, number>;
}

export type BalanceRead = { kind: 'loaded'; balance: number } | { kind: 'not_loaded'; epoch: string };

export interface Gate {
  reserve(req: ReserveRequest): Promise<ReserveResult>;
  /** `charged` above the reservation is clamped to it; the answer says what was charged. */
  settle(accountId: string, conversionId: string, charged: number): Promise<SettleResult>;
  /** settle with 0 charged: a failed, deleted or cancelled conversion. */
  release(accountId: string, conversionId: string): Promise<SettleResult>;
  /** `epoch` is the one a `not_loaded` answer carried. */
  load(accountId: string, snapshot: LedgerSnapshot, epoch: string): Promise<LoadResult>;
  adjust(accountId: string, delta: number): Promise<AdjustResult>;
  /** Available balance, or null when the account is not loaded. */
  balance(accountId: string): Promise<number | null>;
  /** The balance when loaded, else the epoch a `load` must carry (read in one step). */
  readBalance(accountId: string): Promise<BalanceRead>;
  /** Conversions holding a reservation (the concurrency count). */
  running(accountId: string): Promise<number>;
  /** Counts one request against the account's rate; an allowed one also reads the balance (in
   *  the same round trip), for an answer that reserves nothing. */
  rateLimit(accountId: string, perMinute: number): Promise<RateResult>;
  /** The reservations held (conversion id -> credits), or null when the account is not loaded. */
  held(accountId: string): Promise<Map<string, number> | null>;
  /** The balance and the reservations held, both of one moment; null when not loaded. */
  holdings(accountId: string): Promise<Holdings | null>;
  /** Adds `delta` to the balance only while the account holds exactly `seen` (the gate audit's
   *  mend: two audits that saw one moment add it once); not applied otherwise. */
  mend(accountId: string, delta: number, seen: Holdings): Promise<AdjustResult>;
  /** Holds a reservation the ledger has open but the gate lost, taking its credits from the
   *  balance (audit.ts); false when not loaded or already held (nothing changed). */
  adopt(accountId: string, conversionId: string, credits: number): Promise<boolean>;
  /** Drops the balance and reservations (so the next reserve rebuilds from the ledger); keeps
   *  idempotency claims and the rate window, which the ledger cannot rebuild. */
  forget(accountId: string): Promise<void>;
  close(): Promise<void>;
}

/** The one mapping from a gate refusal to the API error a client sees. */
export function refusalError(r: GateRefusal): ApiError {
  switch (r.refusal) {
    case Refusal.InsufficientCredits:
      return new ApiError('insufficient_credits',
        `This request needs ${r.credits} credits; the available balance is ${r.balance}.`);
    case Refusal.ConcurrencyLimited:
      return new ApiError('concurrency_limited',
        `${r.running} conversions are already running, the plan's limit.`,
        { 'Retry-After': String(r.retryAfter) });
    case Refusal.RateLimited:
      return new ApiError('rate_limited', 'Too many requests in this minute.',
        { 'Retry-After': String(r.retryAfter) });
    case Refusal.IdempotencyKeyReused:
      return new ApiError('idempotency_key_reused',
        'This Idempotency-Key was already used with a different request.');
  }
}

/** Reserve, rebuilding the account from the ledger when the gate does not hold it. Gives up with
 *  503 service_unavailable when money keeps moving under `attempts` rebuilds in a row. */
export async function reserveWithRebuild(gate: Gate, req: ReserveRequest,
  readLedger: (accountId: string) => Promise<LedgerSnapshot>, attempts = 3): Promise<ReserveResult> {
  for (let rebuilds = 0; ; rebuilds++) {
    const result = await gate.reserve(req);
    if (result.kind !== 'not_loaded') return result;
    if (rebuilds === attempts) {
      throw new ApiError('service_unavailable', 'The credit balance could not be rebuilt; retry shortly.');
    }
    // A stale or already_loaded answer needs nothing more: the next reserve tells what to do.
    await gate.load(req.accountId, await readLedger(req.accountId), result.epoch);
  }
}

// Shared argument checks: both gates throw the same TypeError on a caller bug.

function credits(name: string, n: number, min: number): void {
  if (!Number.isSafeInteger(n) || n < min || Math.abs(n) > MAX_CREDITS) {
    throw new TypeError(`${name} must be an integer in [${min}, ${MAX_CREDITS}], got ${n}`);
  }
}

export function checkId(name: string, id: string): void {
  if (typeof id !== 'string' || id === '' || /[{}]/.test(id)) {
    throw new TypeError(`${name} must be a non-empty string without braces, got ${JSON.stringify(id)}`);
  }
}

export function checkReserve(req: ReserveRequest): void {
  checkId('accountId', req.accountId);
  checkId('conversionId', req.conversionId);
  credits('credits', req.credits, 0);
  if (!Number.isSafeInteger(req.concurrencyLimit)) throw new TypeError('concurrencyLimit must be an integer');
  const idem = req.idempotency;
  if (idem) {
    if (idem.key === '' || idem.fingerprint === '') throw new TypeError('idempotency key and fingerprint must be non-empty');
    if (!Number.isSafeInteger(idem.ttlSeconds) || idem.ttlSeconds < 1) throw new TypeError('idempotency ttlSeconds must be >= 1');
  }
}

export function checkSettle(accountId: string, conversionId: string, charged: number): void {
  checkId('accountId', accountId);
  checkId('conversionId', conversionId);
  credits('charged', charged, 0);
}

export function checkLoad(accountId: string, snapshot: LedgerSnapshot): void {
  checkId('accountId', accountId);
  credits('balance', snapshot.balance, -MAX_CREDITS);
  const seen = new Set<string>();
  for (const r of snapshot.reservations) {
    checkId('conversionId', r.conversionId);
    credits('reservation credits', r.credits, 0);
    if (seen.has(r.conversionId)) throw new TypeError(`reservation ${r.conversionId} is listed twice`);
    seen.add(r.conversionId);
  }
}

/** Holdings as one comparable text: "conversionId<TAB>credits" lines in id order (mend-2.lua). */
export function heldText(held: Map<string, number>): string {
  return [...held].map(([conversionId, credits]) => `${conversionId}\t${credits}`).sort().join('\n');
}

/** The same balance and the same reservations: one moment of an account, as mend compares it. */
export function sameHoldings(a: Holdings, b: Holdings): boolean {
  return a.balance === b.balance && heldText(a.held) === heldText(b.held);
}

export function checkAdjust(accountId: string, delta: number): void {
  checkId('accountId', accountId);
  credits('delta', delta, -MAX_CREDITS);
}
