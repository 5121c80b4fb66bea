// The billing gate in process memory, for the embedded single-process mode (no REDIS_URL). Same
// semantics as RedisGate and its Lua scripts, step for step (see gate.ts and lua/*.lua). Each
// method's body is synchronous from its checks to its writes — no await inside — so every call is
// atomic by construction on the one event loop. TTLs are timestamps checked on read.

import { randomUUID } from 'node:crypto';
import {
  CONCURRENCY_RETRY_AFTER_S, EPOCH_TTL_S, RATE_WINDOW_MS, Refusal,
  checkAdjust, checkId, sameHoldings, checkLoad, checkReserve, checkSettle,
  type AdjustResult, type Gate, type LedgerSnapshot, type LoadResult, type RateResult,
  type ReserveRequest, type ReserveResult, type SettleResult, type BalanceRead, type Holdings,
} from './gate.js';

interface Expiring<T> { value: T; expiresAt: number }

interface Account {
  /** null = not loaded (the Redis balance key is absent). */
  balance: number | null;
  reservations: Map<string, number>;
  epoch?: Expiring<string>;
  rate?: Expiring<number>;
  idempotency: Map<string, Expiring<{ conversionId: string; fingerprint: string }>>;
}

export interface LocalGateOptions {
  /** Clock in milliseconds; tests pass a fake one. */
  now?: () => number;
}

export class LocalGate implements Gate {
  private readonly accounts = new Map<string, Account>();
  private readonly now: () => number;

  constructor(opts: LocalGateOptions = {}) {
    this.now = opts.now ?? Date.now;
  }

  private account(accountId: string): Account {
    checkId('accountId', accountId);
    let a = this.accounts.get(accountId);
    if (!a) {
      a = { balance: null, reservations: new Map(), idempotency: new Map() };
      this.accounts.set(accountId, a);
    }
    return a;
  }

  private live<T>(e: Expiring<T> | undefined): e is Expiring<T> {
    return e !== undefined && e.expiresAt > this.now();
  }

  /** Money moved while not loaded: any rebuild that read the ledger before now is stale. */
  private stamp(a: Account): void {
    a.epoch = { value: randomUUID(), expiresAt: this.now() + EPOCH_TTL_S * 1000 };
  }

  /** Drops expired idempotency claims. Claims are mostly inserted in expiry order, so walking
   *  from the oldest and stopping at the first live one keeps this cheap. */
  private sweep(a: Account): void {
    for (const [key, claim] of a.idempotency) {
      if (this.live(claim)) break;
      a.idempotency.delete(key);
    }
  }

  async reserve(req: ReserveRequest): Promise<ReserveResult> {
    checkReserve(req);
    const a = this.account(req.accountId);
    if (a.balance === null) return { kind: 'not_loaded', epoch: this.live(a.epoch) ? a.epoch.value : '' };

    const idem = req.idempotency;
    if (idem) {
      this.sweep(a);
      const claim = a.idempotency.get(idem.key);
      if (this.live(claim)) {
        if (claim.value.fingerprint === idem.fingerprint) return { kind: 'replay', conversionId: claim.value.conversionId };
        return { kind: 'refused', refusal: Refusal.IdempotencyKeyReused };
      }
    }
    if (a.reservations.has(req.conversionId)) {
      throw new Error('DUPLICATE conversion already holds a reservation');
    }
    const running = a.reservations.size;
    if (running >= req.concurrencyLimit) {
      return { kind: 'refused', refusal: Refusal.ConcurrencyLimited, running, retryAfter: CONCURRENCY_RETRY_AFTER_S };
    }
    // Free work (0 credits) is never refused for money, even on a negative balance.
    if (req.credits > 0 && a.balance < req.credits) {
      return { kind: 'refused', refusal: Refusal.InsufficientCredits, balance: a.balance, credits: req.credits };
    }

    a.balance -= req.credits;
    a.reservations.set(req.conversionId, req.credits);
    if (idem) {
      a.idempotency.delete(idem.key); // re-insert at the end: keeps the map in expiry order
      a.idempotency.set(idem.key, {
        value: { conversionId: req.conversionId, fingerprint: idem.fingerprint },
        expiresAt: this.now() + idem.ttlSeconds * 1000,
      });
    }
    return { kind: 'reserved', balance: a.balance };
  }

  async settle(accountId: string, conversionId: string, charged: number): Promise<SettleResult> {
    checkSettle(accountId, conversionId, charged);
    const a = this.account(accountId);
    if (a.balance === null) {
      this.stamp(a);
      return { settled: false, reason: 'not_loaded' };
    }
    const reserved = a.reservations.get(conversionId);
    if (reserved === undefined) return { settled: false, reason: 'not_held' };
    const applied = Math.min(charged, reserved);
    a.balance += reserved - applied;
    a.reservations.delete(conversionId);
    return { settled: true, reserved, charged: applied, balance: a.balance };
  }

  release(accountId: string, conversionId: string): Promise<SettleResult> {
    return this.settle(accountId, conversionId, 0);
  }

  async load(accountId: string, snapshot: LedgerSnapshot, epoch: string): Promise<LoadResult> {
    checkLoad(accountId, snapshot);
    const a = this.account(accountId);
    if (a.balance !== null) return { kind: 'already_loaded' };
    const current = this.live(a.epoch) ? a.epoch.value : '';
    if (current !== epoch) return { kind: 'stale', epoch: current };
    a.reservations = new Map(snapshot.reservations.map((r) => [r.conversionId, r.credits]));
    a.balance = snapshot.balance;
    return { kind: 'loaded' };
  }

  async adjust(accountId: string, delta: number): Promise<AdjustResult> {
    checkAdjust(accountId, delta);
    const a = this.account(accountId);
    if (a.balance === null) {
      this.stamp(a);
      return { applied: false };
    }
    a.balance += delta;
    return { applied: true, balance: a.balance };
  }

  async balance(accountId: string): Promise<number | null> {
    return this.account(accountId).balance;
  }

  async readBalance(accountId: string): Promise<BalanceRead> {
    const a = this.account(accountId);
    return a.balance === null
      ? { kind: 'not_loaded', epoch: this.live(a.epoch) ? a.epoch.value : '' } : { kind: 'loaded', balance: a.balance };
  }

  async running(accountId: string): Promise<number> {
    return this.account(accountId).reservations.size;
  }

  async held(accountId: string): Promise<Map<string, number> | null> {
    return (await this.holdings(accountId))?.held ?? null;
  }

  async holdings(accountId: string): Promise<Holdings | null> {
    const a = this.account(accountId);
    return a.balance === null ? null : { balance: a.balance, held: new Map(a.reservations) };
  }

  async mend(accountId: string, delta: number, seen: Holdings): Promise<AdjustResult> {
    checkAdjust(accountId, delta);
    const a = this.account(accountId);
    if (a.balance === null || !sameHoldings({ balance: a.balance, held: a.reservations }, seen)) return { applied: false };
    a.balance += delta;
    return { applied: true, balance: a.balance };
  }

  async adopt(accountId: string, conversionId: string, credits: number): Promise<boolean> {
    checkSettle(accountId, conversionId, credits);
    const a = this.account(accountId);
    if (a.balance === null || a.reservations.has(conversionId)) return false;
    a.reservations.set(conversionId, credits);
    a.balance -= credits;
    return true;
  }

  async rateLimit(accountId: string, perMinute: number): Promise<RateResult> {
    if (!Number.isSafeInteger(perMinute)) throw new TypeError('perMinute must be an integer');
    const a = this.account(accountId);
    const now = this.now();
    const window = this.live(a.rate) ? a.rate : undefined;
    const count = window?.value ?? 0;
    if (count >= perMinute) {
      const ms = window ? window.expiresAt - now : RATE_WINDOW_MS;
      return { allowed: false, kind: 'refused', refusal: Refusal.RateLimited, retryAfter: Math.max(1, Math.ceil(ms / 1000)) };
    }
    if (window) window.value += 1;
    else a.rate = { value: 1, expiresAt: now + RATE_WINDOW_MS };
    return { allowed: true, remaining: perMinute - count - 1, balance: await this.readBalance(accountId) };
  }

  async forget(accountId: string): Promise<void> {
    const a = this.account(accountId);
    a.balance = null;
    a.reservations = new Map();
  }

  /** Drops every account, as a process restart would (tests). */
  clear(): void {
    this.accounts.clear();
  }

  async close(): Promise<void> {}
}
