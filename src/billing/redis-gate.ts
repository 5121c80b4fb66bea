// The billing gate on Redis, shared by every process (see gate.ts for the contract). Each money
// step is one Lua script from ./lua, run through ioredis `defineCommand` (EVALSHA, falling back to
// EVAL on NOSCRIPT), so concurrent calls are one command each and batch well under ioredis
// auto-pipelining; an account's rate-limit calls made in one turn of the event loop share one
// (rateLimit). All keys of one account carry the hash tag `{acct:<id>}`: cluster-safe.
//
// Key layout under the constructor's prefix P, for account A:
//   P{acct:A}:balance        available credits (absent = not loaded)
//   P{acct:A}:reservations   hash conversionId -> credits held (its size = running)
//   P{acct:A}:epoch          stamped when money moves while not loaded (TTL EPOCH_TTL_S)
//   P{acct:A}:idem:<key>     idempotency claim {conversion, fingerprint} (TTL from the caller)
//   P{acct:A}:rate           requests in the current rate window (TTL RATE_WINDOW_MS)

import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis, type Cluster } from 'ioredis';
import {
  CONCURRENCY_RETRY_AFTER_S, EPOCH_TTL_S, RATE_WINDOW_MS, Refusal, heldText,
  checkAdjust, checkId, checkLoad, checkReserve, checkSettle,
  type AdjustResult, type Gate, type LedgerSnapshot, type LoadResult, type RateResult,
  type ReserveRequest, type ReserveResult, type SettleResult, type BalanceRead, type Holdings,
} from './gate.js';

type Reply = Array<number | string>;
type ScriptFn = (...args: Array<string | number>) => Promise<Reply>;

interface Script { command: string; numberOfKeys: number; lua: string }

/** A rate-limit call waiting for its account's script run. */
interface RateCall {
  perMinute: number;
  resolve(result: RateResult): void;
  reject(err: unknown): void;
}

// Next to this file, from the sources and in the build alike (scripts/build.mjs copies them).
const LUA_DIR = fileURLToPath(new URL('./lua/', import.meta.url));

let scripts: Map<string, Script> | undefined;

/** Reads every `<name>-<nKeys>.lua` once; the number of keys comes from the file name. */
function loadScripts(): Map<string, Script> {
  if (scripts) return scripts;
  if (!existsSync(LUA_DIR)) throw new Error(`billing: the lua/ scripts directory ${LUA_DIR} was not found next to redis-gate`);
  const found = new Map<string, Script>();
  for (const file of readdirSync(LUA_DIR)) {
    const m = /^([a-z]+)-(\d+)\.lua$/.exec(file);
    if (!m) continue;
    found.set(m[1]!, {
      command: `docpipeBilling_${m[1]}`,
      numberOfKeys: Number(m[2]),
      lua: readFileSync(LUA_DIR + file, 'utf8'),
    });
  }
  scripts = found;
  return found;
}

/** Milliseconds before the n-th reconnect attempt in a row: 50 ms more each time, at most 250. */
export function reconnectDelayMs(attempt: number): number {
  return Math.min(50 * attempt, 250);
}

export interface RedisGateOptions {
  /** A connected client (the caller closes it) or a URL (the gate owns and closes its client). */
  redis: Redis | Cluster | string;
  /** Prepended to every key, e.g. `docpipe:` or `test:gate:<random>:`. No braces. */
  prefix: string;
}

export class RedisGate implements Gate {
  readonly redis: Redis | Cluster;
  readonly prefix: string;
  private readonly ownsClient: boolean;
  private readonly fns = new Map<string, ScriptFn>();
  /** Rate-limit calls made in this turn of the event loop, by account (sent from setImmediate). */
  private rating = new Map<string, RateCall[]>();

  constructor(opts: RedisGateOptions) {
    if (/[{}]/.test(opts.prefix)) throw new TypeError('the key prefix must not contain braces');
    this.prefix = opts.prefix;
    this.ownsClient = typeof opts.redis === 'string';
    this.redis = typeof opts.redis === 'string'
      ? new Redis(opts.redis, {
        enableAutoPipelining: true,
        // A request must not hang while Redis is away: fail it after a short retry (the server
        // answers 503 service_unavailable, retryable) and keep reconnecting in the background.
        // A command waits out maxRetriesPerRequest reconnect attempts; ioredis's default delay
        // between them grows by 50 ms each time up to 2 s (commands then wait seconds, and the
        // first ones after Redis is back wait for the next attempt): keep it at most 250 ms.
        maxRetriesPerRequest: 2,
        retryStrategy: reconnectDelayMs,
        connectTimeout: 2_000,
      })
      : opts.redis;
    // Connection errors surface on the commands that fail (and in /readyz); without a listener
    // ioredis would print every reconnect attempt.
    if (this.ownsClient) this.redis.on('error', () => {});
    for (const [name, s] of loadScripts()) {
      this.redis.defineCommand(s.command, { numberOfKeys: s.numberOfKeys, lua: s.lua });
      const fn = (this.redis as unknown as Record<string, ScriptFn>)[s.command]!;
      this.fns.set(name, fn.bind(this.redis));
    }
  }

  /** The keys of one account; exposed so tests and admin tools can inspect or sabotage them. */
  keys(accountId: string) {
    checkId('accountId', accountId);
    const base = `${this.prefix}{acct:${accountId}}:`;
    return {
      balance: `${base}balance`,
      reservations: `${base}reservations`,
      epoch: `${base}epoch`,
      rate: `${base}rate`,
      idempotency: (key: string) => `${base}idem:${key}`,
    };
  }

  private run(name: string, ...args: Array<string | number>): Promise<Reply> {
    const fn = this.fns.get(name);
    if (!fn) throw new Error(`billing: script ${name} is missing from lua/`);
    return fn(...args);
  }

  async reserve(req: ReserveRequest): Promise<ReserveResult> {
    checkReserve(req);
    const k = this.keys(req.accountId);
    const idem = req.idempotency;
    const r = await this.run('reserve', k.balance, k.reservations, k.epoch,
      k.idempotency(idem?.key ?? ''), req.conversionId, req.credits, req.concurrencyLimit,
      idem?.fingerprint ?? '', idem?.ttlSeconds ?? 1);
    switch (r[0]) {
      case 0: return { kind: 'not_loaded', epoch: String(r[1]) };
      case 1: return { kind: 'reserved', balance: Number(r[1]) };
      case 2: return { kind: 'replay', conversionId: String(r[1]) };
      case Refusal.InsufficientCredits:
        return { kind: 'refused', refusal: Refusal.InsufficientCredits, balance: Number(r[1]), credits: req.credits };
      case Refusal.ConcurrencyLimited:
        return { kind: 'refused', refusal: Refusal.ConcurrencyLimited, running: Number(r[1]), retryAfter: CONCURRENCY_RETRY_AFTER_S };
      case Refusal.IdempotencyKeyReused:
        return { kind: 'refused', refusal: Refusal.IdempotencyKeyReused };
    }
    throw new Error(`billing: reserve answered ${JSON.stringify(r)}`);
  }

  async settle(accountId: string, conversionId: string, charged: number): Promise<SettleResult> {
    checkSettle(accountId, conversionId, charged);
    const k = this.keys(accountId);
    const r = await this.run('settle', k.balance, k.reservations, k.epoch,
      conversionId, charged, randomUUID(), EPOCH_TTL_S);
    if (r[0] === 1) return { settled: true, reserved: Number(r[1]), charged: Number(r[2]), balance: Number(r[3]) };
    return { settled: false, reason: r[0] === 0 ? 'not_loaded' : 'not_held' };
  }

  release(accountId: string, conversionId: string): Promise<SettleResult> {
    return this.settle(accountId, conversionId, 0);
  }

  async load(accountId: string, snapshot: LedgerSnapshot, epoch: string): Promise<LoadResult> {
    checkLoad(accountId, snapshot);
    const k = this.keys(accountId);
    const pairs = snapshot.reservations.flatMap((r) => [r.conversionId, r.credits]);
    const r = await this.run('load', k.balance, k.reservations, k.epoch, epoch, snapshot.balance, ...pairs);
    if (r[0] === 1) return { kind: 'loaded' };
    if (r[0] === 2) return { kind: 'already_loaded' };
    return { kind: 'stale', epoch: String(r[1]) };
  }

  async adjust(accountId: string, delta: number): Promise<AdjustResult> {
    checkAdjust(accountId, delta);
    const k = this.keys(accountId);
    const r = await this.run('adjust', k.balance, k.epoch, delta, randomUUID(), EPOCH_TTL_S);
    return r[0] === 1 ? { applied: true, balance: Number(r[1]) } : { applied: false };
  }

  async balance(accountId: string): Promise<number | null> {
    const v = await this.redis.get(this.keys(accountId).balance);
    return v === null ? null : Number(v);
  }

  async readBalance(accountId: string): Promise<BalanceRead> {
    const k = this.keys(accountId);
    const [balance, epoch] = await this.redis.mget(k.balance, k.epoch);
    return balance === null || balance === undefined
      ? { kind: 'not_loaded', epoch: epoch ?? '' } : { kind: 'loaded', balance: Number(balance) };
  }

  async running(accountId: string): Promise<number> {
    return this.redis.hlen(this.keys(accountId).reservations);
  }

  async held(accountId: string): Promise<Map<string, number> | null> {
    return (await this.holdings(accountId))?.held ?? null;
  }

  async holdings(accountId: string): Promise<Holdings | null> {
    const k = this.keys(accountId);
    // One MULTI: the balance and the reservations of one moment.
    const r = await this.redis.multi().get(k.balance).hgetall(k.reservations).exec();
    if (!r || r.some(([err]) => err)) throw r?.find(([err]) => err)?.[0] ?? new Error('billing: holdings() was not answered');
    if (r[0]![1] === null) return null;
    const all = r[1]![1] as Record<string, string>;
    return { balance: Number(r[0]![1]), held: new Map(Object.entries(all).map(([conv, credits]) => [conv, Number(credits)])) };
  }

  async mend(accountId: string, delta: number, seen: Holdings): Promise<AdjustResult> {
    checkAdjust(accountId, delta);
    const k = this.keys(accountId);
    const r = await this.run('mend', k.balance, k.reservations, delta, String(seen.balance), heldText(seen.held));
    return r[0] === 1 ? { applied: true, balance: Number(r[1]) } : { applied: false };
  }

  async adopt(accountId: string, conversionId: string, credits: number): Promise<boolean> {
    checkSettle(accountId, conversionId, credits);
    const k = this.keys(accountId);
    const r = await this.run('adopt', k.balance, k.reservations, conversionId, credits);
    return r[0] === 1;
  }

  /**
   * The rate-limit calls of an account made in one turn of the event loop (the requests one
   * poll of the sockets brought) are decided by one script run, sent from setImmediate after
   * the turn's I/O callbacks, each in arrival order exactly as if alone. Each call was a command
   * of its own through ioredis (its objects, its promise, its reply and a script run in Redis).
   * Nothing waits for an earlier run: a run fails or answers on its own, as one command would.
   */
  rateLimit(accountId: string, perMinute: number): Promise<RateResult> {
    if (!Number.isSafeInteger(perMinute)) return Promise.reject(new TypeError('perMinute must be an integer'));
    try {
      checkId('accountId', accountId);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      if (this.rating.size === 0) setImmediate(() => this.sendRates());
      let waiting = this.rating.get(accountId);
      if (!waiting) {
        waiting = [];
        this.rating.set(accountId, waiting);
      }
      waiting.push({ perMinute, resolve, reject });
    });
  }

  /** One script run per account for the calls of the turn. */
  private sendRates(): void {
    const turn = this.rating;
    this.rating = new Map();
    for (const [accountId, calls] of turn) void this.rateTogether(accountId, calls);
  }

  private async rateTogether(accountId: string, calls: RateCall[]): Promise<void> {
    try {
      const k = this.keys(accountId);
      const r = await this.run('rate', k.rate, k.balance, k.epoch, RATE_WINDOW_MS, ...calls.map((c) => c.perMinute));
      const balance: BalanceRead = r[0] === '' ? { kind: 'not_loaded', epoch: String(r[1]) } : { kind: 'loaded', balance: Number(r[0]) };
      calls.forEach((c, i) => {
        const value = Number(r[3 + 2 * i]);
        if (r[2 + 2 * i] === 1) c.resolve({ allowed: true, remaining: value, balance });
        else c.resolve({ allowed: false, kind: 'refused', refusal: Refusal.RateLimited, retryAfter: value });
      });
    } catch (err) {
      for (const c of calls) c.reject(err);
    }
  }

  async forget(accountId: string): Promise<void> {
    const k = this.keys(accountId);
    await this.redis.del(k.balance, k.reservations);
  }

  async close(): Promise<void> {
    if (!this.ownsClient) return;
    if (this.redis.status !== 'ready') {
      // QUIT needs a live connection. While Redis is away, stop reconnecting: ioredis then
      // drops its reconnect timer without ever emitting 'end', so there is nothing to wait for.
      this.redis.disconnect();
      return;
    }
    const ended = new Promise((resolve) => this.redis.once('end', resolve));
    await this.redis.quit().catch(() => this.redis.disconnect());
    await ended;
  }
}
