// One contract suite for the billing gate, run against RedisGate on a real Redis (REDIS_URL,
// default 127.0.0.1:6379, keys under a random prefix removed at the end) and against LocalGate.
// Two moves throughout: fan-out (N identical calls at once, exactly one outcome) and sabotage
// (change state between steps, expect the exact answer).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { ApiError } from '../../src/errors.js';
import {
  RATE_WINDOW_MS, Refusal, refusalError, reserveWithRebuild,
  type Gate, type GateRefusal, type LedgerSnapshot, type ReserveRequest, type ReserveResult,
} from '../../src/billing/gate.js';
import { RedisGate } from '../../src/billing/redis-gate.js';
import { LocalGate } from '../../src/billing/local-gate.js';

interface Harness {
  gate: Gate;
  /** Lose every key or all state at once, as FLUSHALL or a process restart would. */
  wipe(): Promise<void>;
  /** Let `seconds` pass for TTLs (Redis: really waits; keep it short). */
  elapse(seconds: number): Promise<void>;
  expireRateWindow(accountId: string): Promise<void>;
}

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableAutoPipelining: true });
const prefix = `test:gate:${randomBytes(6).toString('hex')}:`;

async function deletePrefix(): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length) await Promise.all(keys.map((k) => redis.del(k)));
    cursor = next;
  } while (cursor !== '0');
}

t.teardown(async () => {
  await deletePrefix();
  await redis.quit();
});

const redisGate = new RedisGate({ redis, prefix });
let clock = Date.now();
const localGate = new LocalGate({ now: () => clock });

const harnesses: Record<string, Harness> = {
  RedisGate: {
    gate: redisGate,
    wipe: deletePrefix,
    elapse: (s) => new Promise((resolve) => setTimeout(resolve, s * 1000)),
    expireRateWindow: async (id) => { await redis.del(redisGate.keys(id).rate); },
  },
  LocalGate: {
    gate: localGate,
    wipe: async () => localGate.clear(),
    elapse: async (s) => { clock += s * 1000; },
    expireRateWindow: async () => { clock += 60_000; },
  },
};

let seq = 0;
const newAccount = () => `acct_${++seq}_${randomBytes(3).toString('hex')}`;
const conv = (i: number | string) => `conv_${i}`;
const kinds = (rs: ReserveResult[]) => rs.map((r) => (r.kind === 'refused' ? Refusal[r.refusal] : r.kind));
const tally = (rs: ReserveResult[]) => kinds(rs).reduce<Record<string, number>>((m, k) => ({ ...m, [k]: (m[k] ?? 0) + 1 }), {});

/** Loads an account the way a caller does: reserve says not_loaded, load with its epoch. */
async function fund(gate: Gate, accountId: string, balance: number, reservations: LedgerSnapshot['reservations'] = []) {
  const probe = await gate.reserve({ accountId, conversionId: 'probe', credits: 0, concurrencyLimit: 1 });
  if (probe.kind !== 'not_loaded') throw new Error(`expected not_loaded, got ${probe.kind}`);
  const loaded = await gate.load(accountId, { balance, reservations }, probe.epoch);
  if (loaded.kind !== 'loaded') throw new Error(`expected loaded, got ${loaded.kind}`);
}

for (const [name, h] of Object.entries(harnesses)) {
  t.test(`${name} keeps the gate contract`, async (t) => {
    const { gate } = h;
    const req = (accountId: string, i: number | string, credits: number, over: Partial<ReserveRequest> = {}): ReserveRequest =>
      ({ accountId, conversionId: conv(i), credits, concurrencyLimit: 1000, ...over });

    t.test('500 concurrent reserves of 1 credit on a balance of 37 reserve exactly 37', async (t) => {
      const a = newAccount();
      await fund(gate, a, 37);
      const rs = await Promise.all(Array.from({ length: 500 }, (_, i) => gate.reserve(req(a, i, 1))));
      t.strictSame(tally(rs), { reserved: 37, InsufficientCredits: 463 });
      t.ok(rs.every((r) => r.kind === 'reserved' || (r.kind === 'refused' && r.refusal === Refusal.InsufficientCredits && r.balance === 0 && r.credits === 1)));
      t.equal(await gate.balance(a), 0);
      t.equal(await gate.running(a), 37);

      // Settle everything: even reservations are charged 1, odd ones 0; refused ones hold nothing.
      const held = rs.flatMap((r, i) => (r.kind === 'reserved' ? [i] : []));
      const settled = await Promise.all(rs.map((_, i) => gate.settle(a, conv(i), i % 2 === 0 ? 1 : 0)));
      const odd = held.filter((i) => i % 2 === 1).length;
      t.equal(settled.filter((s) => s.settled).length, 37);
      t.ok(settled.every((s, i) => (held.includes(i) ? s.settled : !s.settled && s.reason === 'not_held')));
      t.equal(await gate.balance(a), odd, 'only the uncharged reservations came back');
      t.equal(await gate.running(a), 0);
    });

    t.test('concurrent reserves of mixed sizes never spend more than the balance', async (t) => {
      const a = newAccount();
      await fund(gate, a, 100);
      const sizes = Array.from({ length: 60 }, (_, i) => ((i * 7) % 10) + 1);
      const rs = await Promise.all(sizes.map((c, i) => gate.reserve(req(a, i, c))));
      const spent = rs.reduce((s, r, i) => s + (r.kind === 'reserved' ? sizes[i]! : 0), 0);
      t.ok(spent <= 100 && spent > 90, `spent ${spent}`);
      t.equal(await gate.balance(a), 100 - spent);
      t.ok(rs.every((r, i) => r.kind === 'reserved' || (r.kind === 'refused' && r.refusal === Refusal.InsufficientCredits && r.balance < sizes[i]!)));
    });

    t.test('50 concurrent retries with one idempotency key reserve once and replay that conversion', async (t) => {
      const a = newAccount();
      await fund(gate, a, 20);
      const idempotency = { key: `${a}:/v1/convert/pdf:k1`, fingerprint: 'fp-1', ttlSeconds: 86_400 };
      // A concurrency limit of 1 also proves replays are answered before the slot check.
      const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => gate.reserve(req(a, i, 5, { idempotency, concurrencyLimit: 1 }))));
      t.strictSame(tally(rs), { reserved: 1, replay: 49 });
      const first = rs.findIndex((r) => r.kind === 'reserved');
      t.ok(rs.every((r) => r.kind === 'reserved' || (r.kind === 'replay' && r.conversionId === conv(first))));
      t.equal(await gate.balance(a), 15, 'the balance moved once');
      t.equal(await gate.running(a), 1);

      const other = await gate.reserve(req(a, 'x', 5, { idempotency: { ...idempotency, fingerprint: 'fp-2' } }));
      t.strictSame(other, { kind: 'refused', refusal: Refusal.IdempotencyKeyReused });
      t.equal(await gate.balance(a), 15);

      await gate.settle(a, conv(first), 5);
      t.strictSame(await gate.reserve(req(a, 'y', 5, { idempotency })), { kind: 'replay', conversionId: conv(first) },
        'the key still replays after the conversion finished');
    });

    t.test('a refused reserve does not claim its idempotency key', async (t) => {
      const a = newAccount();
      await fund(gate, a, 2);
      const idempotency = { key: `${a}:k`, fingerprint: 'fp', ttlSeconds: 60 };
      t.match(await gate.reserve(req(a, 1, 5, { idempotency })), { kind: 'refused', refusal: Refusal.InsufficientCredits, balance: 2 });
      t.strictSame(await gate.adjust(a, 10), { applied: true, balance: 12 });
      t.strictSame(await gate.reserve(req(a, 2, 5, { idempotency })), { kind: 'reserved', balance: 7 });
    });

    t.test('an idempotency key is free again once its TTL has passed', async (t) => {
      const a = newAccount();
      await fund(gate, a, 10);
      const idempotency = { key: `${a}:k`, fingerprint: 'fp', ttlSeconds: 1 };
      t.strictSame(await gate.reserve(req(a, 1, 1, { idempotency })), { kind: 'reserved', balance: 9 });
      await h.elapse(1.2);
      t.strictSame(await gate.reserve(req(a, 2, 1, { idempotency: { ...idempotency, fingerprint: 'other' } })), { kind: 'reserved', balance: 8 });
    });

    t.test('a burst of 20 with a concurrency limit of 3 reserves exactly 3 and settle or release frees a slot', async (t) => {
      const a = newAccount();
      await fund(gate, a, 1000);
      const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => gate.reserve(req(a, i, 2, { concurrencyLimit: 3 }))));
      t.strictSame(tally(rs), { reserved: 3, ConcurrencyLimited: 17 });
      t.ok(rs.every((r) => r.kind === 'reserved' || (r.kind === 'refused' && r.refusal === Refusal.ConcurrencyLimited && r.running === 3 && r.retryAfter >= 1)));
      t.equal(await gate.balance(a), 994);
      const held = rs.flatMap((r, i) => (r.kind === 'reserved' ? [i] : []));

      t.match(await gate.settle(a, conv(held[0]!), 1), { settled: true, reserved: 2, charged: 1 });
      t.match(await gate.reserve(req(a, 'after-settle', 2, { concurrencyLimit: 3 })), { kind: 'reserved' });
      t.match(await gate.reserve(req(a, 'still-full', 2, { concurrencyLimit: 3 })), { kind: 'refused', refusal: Refusal.ConcurrencyLimited });
      t.match(await gate.release(a, conv(held[1]!)), { settled: true, reserved: 2, charged: 0 });
      t.match(await gate.reserve(req(a, 'after-release', 2, { concurrencyLimit: 3 })), { kind: 'reserved' });
      t.equal(await gate.running(a), 3);
      t.equal(await gate.balance(a), 1000 - 2 * 3 - 1);
    });

    t.test('settling twice charges once, even when both settles race', async (t) => {
      const a = newAccount();
      await fund(gate, a, 50);
      await gate.reserve(req(a, 1, 10));
      const both = await Promise.all([gate.settle(a, conv(1), 4), gate.settle(a, conv(1), 4)]);
      t.equal(both.filter((s) => s.settled).length, 1);
      t.ok(both.some((s) => !s.settled && s.reason === 'not_held'));
      t.strictSame(await gate.settle(a, conv(1), 4), { settled: false, reason: 'not_held' });
      t.equal(await gate.balance(a), 46);
    });

    t.test('a charge above the reservation is clamped to the reservation', async (t) => {
      const a = newAccount();
      await fund(gate, a, 50);
      await gate.reserve(req(a, 1, 10));
      t.strictSame(await gate.settle(a, conv(1), 25), { settled: true, reserved: 10, charged: 10, balance: 40 });
      t.equal(await gate.balance(a), 40);
    });

    t.test('release returns the full reservation, and a release after a cancel changes nothing', async (t) => {
      const a = newAccount();
      await fund(gate, a, 30);
      await gate.reserve(req(a, 1, 12));
      t.equal(await gate.balance(a), 18);
      t.strictSame(await gate.release(a, conv(1)), { settled: true, reserved: 12, charged: 0, balance: 30 });
      t.equal(await gate.balance(a), 30);
      // The job finishing after a DELETE released its reservation must not charge.
      t.strictSame(await gate.settle(a, conv(1), 12), { settled: false, reason: 'not_held' });
      t.equal(await gate.balance(a), 30);
    });

    t.test('a reservation of 0 credits takes a slot and is allowed even on a negative balance', async (t) => {
      const a = newAccount();
      await fund(gate, a, 0);
      await gate.adjust(a, -3);
      t.strictSame(await gate.reserve(req(a, 1, 0, { concurrencyLimit: 1 })), { kind: 'reserved', balance: -3 });
      t.match(await gate.reserve(req(a, 2, 0, { concurrencyLimit: 1 })), { kind: 'refused', refusal: Refusal.ConcurrencyLimited });
      t.match(await gate.reserve(req(a, 3, 1, { concurrencyLimit: 5 })), { kind: 'refused', refusal: Refusal.InsufficientCredits, balance: -3 });
      t.strictSame(await gate.settle(a, conv(1), 0), { settled: true, reserved: 0, charged: 0, balance: -3 });
      t.equal(await gate.running(a), 0);
    });

    t.test('an account is not loaded before load, and load never overwrites a loaded account', async (t) => {
      const a = newAccount();
      t.equal(await gate.balance(a), null);
      const r = await gate.reserve(req(a, 1, 1));
      t.equal(r.kind, 'not_loaded');
      if (r.kind !== 'not_loaded') return;
      t.strictSame(await gate.load(a, { balance: 10, reservations: [] }, r.epoch), { kind: 'loaded' });
      t.strictSame(await gate.load(a, { balance: 999, reservations: [{ conversionId: 'x', credits: 1 }] }, r.epoch), { kind: 'already_loaded' });
      t.equal(await gate.balance(a), 10);
      t.equal(await gate.running(a), 0);
    });

    t.test('load restores open reservations, which count as running and settle correctly', async (t) => {
      const a = newAccount();
      await fund(gate, a, 40, [{ conversionId: conv(1), credits: 7 }, { conversionId: conv(2), credits: 3 }]);
      t.equal(await gate.running(a), 2);
      t.match(await gate.reserve(req(a, 3, 1, { concurrencyLimit: 2 })), { kind: 'refused', refusal: Refusal.ConcurrencyLimited });
      t.strictSame(await gate.settle(a, conv(1), 5), { settled: true, reserved: 7, charged: 5, balance: 42 });
      t.strictSame(await gate.release(a, conv(2)), { settled: true, reserved: 3, charged: 0, balance: 45 });
      t.equal(await gate.balance(a), 45);
    });

    t.test('a settle or adjust while not loaded makes a rebuild from an earlier ledger read stale', async (t) => {
      const a = newAccount();
      const r = await gate.reserve(req(a, 1, 1));
      if (r.kind !== 'not_loaded') return t.fail(`expected not_loaded, got ${r.kind}`);
      // The ledger was read now (conv 9 open, 5 held); then the job settles before the load lands.
      const early = { balance: 20, reservations: [{ conversionId: conv(9), credits: 5 }] };
      t.strictSame(await gate.settle(a, conv(9), 2), { settled: false, reason: 'not_loaded' });
      const stale = await gate.load(a, early, r.epoch);
      t.equal(stale.kind, 'stale');
      t.equal(await gate.balance(a), null, 'nothing was loaded');
      if (stale.kind !== 'stale') return;
      t.strictSame(await gate.adjust(a, 100), { applied: false });
      t.equal((await gate.load(a, { balance: 23, reservations: [] }, stale.epoch)).kind, 'stale', 'the adjust moved the epoch again');
      const again = await gate.reserve(req(a, 1, 1));
      if (again.kind !== 'not_loaded') return t.fail(`expected not_loaded, got ${again.kind}`);
      t.strictSame(await gate.load(a, { balance: 123, reservations: [] }, again.epoch), { kind: 'loaded' });
      t.strictSame(await gate.reserve(req(a, 1, 1)), { kind: 'reserved', balance: 122 });
    });

    t.test('mend adds to the balance only while the account is exactly as seen, so two menders add once', async (t) => {
      const a = newAccount();
      t.equal(await gate.holdings(a), null, 'not loaded: nothing to see');
      t.strictSame(await gate.mend(a, 5, { balance: 0, held: new Map() }), { applied: false }, 'and nothing to mend');
      await fund(gate, a, 10);
      t.match(await gate.reserve(req(a, 1, 3)), { kind: 'reserved', balance: 7 });
      const seen = (await gate.holdings(a))!;
      t.strictSame(seen, { balance: 7, held: new Map([[conv(1), 3]]) });
      // Two audits saw the same moment; the first mend lands, the second finds the balance moved.
      t.strictSame(await gate.mend(a, 5, seen), { applied: true, balance: 12 });
      t.strictSame(await gate.mend(a, 5, seen), { applied: false });
      // The same balance with other reservations is not the moment seen either.
      const later = (await gate.holdings(a))!;
      t.match(await gate.reserve(req(a, 2, 4)), { kind: 'reserved', balance: 8 });
      t.strictSame(await gate.adjust(a, 4), { applied: true, balance: 12 });
      t.strictSame(await gate.mend(a, 1, later), { applied: false }, 'a reservation more, the balance as seen: not applied');
      t.strictSame(await gate.mend(a, -2, (await gate.holdings(a))!), { applied: true, balance: 10 }, 'a mend may take money too');
      t.equal(await gate.balance(a), 10);
    });

    t.test('adjust changes a loaded balance and nothing on an unloaded one', async (t) => {
      const a = newAccount();
      t.strictSame(await gate.adjust(a, 50), { applied: false });
      t.equal(await gate.balance(a), null);
      await fund(gate, a, 5);
      t.strictSame(await gate.adjust(a, 50), { applied: true, balance: 55 });
      t.strictSame(await gate.adjust(a, -10), { applied: true, balance: 45 });
    });

    t.test('forget mid-burst answers not_loaded from that point, and keeps idempotency claims', async (t) => {
      const a = newAccount();
      await fund(gate, a, 1000);
      const idempotency = { key: `${a}:k`, fingerprint: 'fp', ttlSeconds: 60 };
      const claimed = await gate.reserve(req(a, 'claimed', 1, { idempotency }));
      const before = Array.from({ length: 50 }, (_, i) => gate.reserve(req(a, i, 1)));
      const forgot = gate.forget(a);
      const after = Array.from({ length: 50 }, (_, i) => gate.reserve(req(a, 50 + i, 1)));
      const rs = await Promise.all([...before, ...after]);
      await forgot;
      t.equal(claimed.kind, 'reserved');
      t.ok(rs.slice(0, 50).every((r) => r.kind === 'reserved'), 'every reserve sent before forget reserved');
      t.ok(rs.slice(50).every((r) => r.kind === 'not_loaded'), 'every reserve sent after it rebuilds');
      t.equal(await gate.running(a), 0);
      // Rebuild from "the ledger": 1000 − 51 held by 51 open reservations.
      const open = [{ conversionId: 'conv_claimed', credits: 1 }, ...Array.from({ length: 50 }, (_, i) => ({ conversionId: conv(i), credits: 1 }))];
      const r = await gate.reserve(req(a, 'z', 1));
      if (r.kind !== 'not_loaded') return t.fail(r.kind);
      t.strictSame(await gate.load(a, { balance: 949, reservations: open }, r.epoch), { kind: 'loaded' });
      t.strictSame(await gate.reserve(req(a, 'again', 1, { idempotency })), { kind: 'replay', conversionId: 'conv_claimed' });
      t.equal(await gate.running(a), 51);
    });

    t.test('after every key is wiped the account is rebuilt exactly from the ledger', async (t) => {
      const a = newAccount();
      await fund(gate, a, 100);
      for (const [i, c] of [[1, 10], [2, 20], [3, 30]] as const) await gate.reserve(req(a, i, c));
      t.equal(await gate.balance(a), 40);
      await h.wipe();
      t.equal((await gate.reserve(req(a, 4, 1))).kind, 'not_loaded');
      const ledger = async (): Promise<LedgerSnapshot> => ({
        balance: 40,
        reservations: [{ conversionId: conv(1), credits: 10 }, { conversionId: conv(2), credits: 20 }, { conversionId: conv(3), credits: 30 }],
      });
      t.strictSame(await reserveWithRebuild(gate, req(a, 4, 5), ledger), { kind: 'reserved', balance: 35 });
      t.equal(await gate.running(a), 4);
      t.match(await gate.settle(a, conv(1), 10), { settled: true, charged: 10 });
      t.match(await gate.settle(a, conv(2), 5), { settled: true, charged: 5 });
      t.match(await gate.release(a, conv(3)), { settled: true, charged: 0 });
      t.match(await gate.release(a, conv(4)), { settled: true, charged: 0 });
      t.equal(await gate.balance(a), 100 - 10 - 5);
    });

    t.test('reserveWithRebuild gives up with service_unavailable when money keeps moving', async (t) => {
      const a = newAccount();
      let reads = 0;
      const restless = async (): Promise<LedgerSnapshot> => {
        reads++;
        await gate.adjust(a, 1); // a grant lands between every ledger read and its load
        return { balance: 10, reservations: [] };
      };
      await t.rejects(reserveWithRebuild(gate, req(a, 1, 1), restless, 3), { code: 'service_unavailable', status: 503 });
      t.equal(reads, 3);
      t.equal(await gate.balance(a), null);
    });

    t.test('a conversion that already holds a reservation cannot reserve again', async (t) => {
      const a = newAccount();
      await fund(gate, a, 10);
      await gate.reserve(req(a, 1, 2));
      await t.rejects(gate.reserve(req(a, 1, 2)), /already holds a reservation/);
      t.equal(await gate.balance(a), 8);
    });

    t.test('the rate limit allows N per minute, then answers with a retryAfter', async (t) => {
      const a = newAccount();
      const first = await Promise.all(Array.from({ length: 5 }, () => gate.rateLimit(a, 5)));
      t.ok(first.every((r) => r.allowed));
      t.strictSame(first.map((r) => (r.allowed ? r.remaining : -1)).sort(), [0, 1, 2, 3, 4]);
      const sixth = await gate.rateLimit(a, 5);
      t.equal(sixth.allowed, false);
      if (!sixth.allowed) t.ok(sixth.retryAfter >= 1 && sixth.retryAfter <= 60, `retryAfter ${sixth.retryAfter}`);
      await h.expireRateWindow(a);
      t.match(await gate.rateLimit(a, 5), { allowed: true, remaining: 4 });
      t.match(await gate.rateLimit(newAccount(), 0), { allowed: false, refusal: Refusal.RateLimited, retryAfter: 60 });
    });

    t.test('bad arguments are refused with a TypeError and change nothing', async (t) => {
      const a = newAccount();
      await fund(gate, a, 10);
      await t.rejects(gate.reserve(req(a, 1, -1)), TypeError);
      await t.rejects(gate.reserve(req(a, 1, 1.5)), TypeError);
      await t.rejects(gate.reserve(req('{x}', 1, 1)), TypeError);
      await t.rejects(gate.settle(a, conv(1), -2), TypeError);
      await t.rejects(gate.load(a, { balance: 1, reservations: [{ conversionId: 'd', credits: 1 }, { conversionId: 'd', credits: 2 }] }, ''), TypeError);
      t.equal(await gate.balance(a), 10);
      t.equal(await gate.running(a), 0);
    });
  });
}

t.test('RedisGate answers not_held when a reservation vanishes between reserve and settle', async (t) => {
  const a = newAccount();
  await fund(redisGate, a, 20);
  await redisGate.reserve({ accountId: a, conversionId: 'c1', credits: 8, concurrencyLimit: 5 });
  await redis.hdel(redisGate.keys(a).reservations, 'c1');
  t.strictSame(await redisGate.settle(a, 'c1', 3), { settled: false, reason: 'not_held' });
  t.equal(await redisGate.balance(a), 12);
  t.equal(await redisGate.running(a), 0);
});

t.test('RedisGate keeps every key of an account under its hash tag and the prefix', async (t) => {
  const a = newAccount();
  await fund(redisGate, a, 5);
  await redisGate.reserve({ accountId: a, conversionId: 'c', credits: 1, concurrencyLimit: 1, idempotency: { key: 'k', fingerprint: 'f', ttlSeconds: 60 } });
  await redisGate.rateLimit(a, 10);
  const keys = await redis.keys(`${prefix}*${a}*`);
  t.equal(keys.length, 4);
  t.ok(keys.every((k) => k.startsWith(`${prefix}{acct:${a}}:`)), keys.join(' '));
});

t.test('a RedisGate given a URL owns its client and closes it', async (t) => {
  const own = new RedisGate({ redis: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix });
  t.equal((await own.reserve({ accountId: newAccount(), conversionId: 'c', credits: 1, concurrencyLimit: 1 })).kind, 'not_loaded');
  await own.close();
  t.equal(own.redis.status, 'end');
  t.equal(redis.status, 'ready', 'a client passed in is left to its owner');
});

const refusals: Array<[GateRefusal, string, number, string | undefined, RegExp]> = [
  [{ kind: 'refused', refusal: Refusal.InsufficientCredits, balance: 3, credits: 7 }, 'insufficient_credits', 402, undefined, /needs 7 credits.*balance is 3/],
  [{ kind: 'refused', refusal: Refusal.ConcurrencyLimited, running: 2, retryAfter: 1 }, 'concurrency_limited', 429, '1', /2 conversions/],
  [{ kind: 'refused', refusal: Refusal.RateLimited, retryAfter: 17 }, 'rate_limited', 429, '17', /Too many requests/],
  [{ kind: 'refused', refusal: Refusal.IdempotencyKeyReused }, 'idempotency_key_reused', 422, undefined, /different request/],
];

for (const [refusal, code, status, retryAfter, detail] of refusals) {
  t.test(`the ${Refusal[refusal.refusal]} refusal becomes ${status} ${code}`, async (t) => {
    const err = refusalError(refusal);
    t.ok(err instanceof ApiError);
    t.equal(err.code, code);
    t.equal(err.status, status);
    t.match(err.message, detail);
    t.strictSame(err.headers, retryAfter === undefined ? {} : { 'Retry-After': retryAfter });
  });
}

t.test('every refusal code has a mapping', async (t) => {
  const codes = Object.values(Refusal).filter((v): v is number => typeof v === 'number');
  t.strictSame(codes.sort(), refusals.map(([r]) => r.refusal).sort());
});

/**
 * A RedisGate on a client of its own without auto-pipelining, whose script runs (EVALSHA, or
 * EVAL on NOSCRIPT) are counted as they are sent.
 */
function countingGate(t: { teardown(fn: () => unknown): void }) {
  const plain = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  t.teardown(() => plain.quit());
  const sent: string[] = [];
  const send = plain.sendCommand.bind(plain);
  plain.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
    sent.push(command.name);
    return (send as (...a: unknown[]) => unknown)(command, ...rest);
  }) as typeof plain.sendCommand;
  return {
    plain,
    gate: new RedisGate({ redis: plain, prefix }),
    scriptRuns: () => sent.filter((n) => n === 'evalsha' || n === 'eval').length,
    clear: () => { sent.length = 0; },
  };
}

t.test('the rate-limit calls of an account made in one turn are decided by one script run, in arrival order', async (t) => {
  const { plain, gate, scriptRuns, clear } = countingGate(t);
  const [a, b] = [newAccount(), newAccount()];
  await fund(gate, a, 7);
  clear();
  const calls = [gate.rateLimit(a, 3), gate.rateLimit(b, 3), gate.rateLimit(a, 3), gate.rateLimit(a, 3), gate.rateLimit(a, 3),
    gate.rateLimit('{x}', 3)];
  const settled = await Promise.allSettled(calls);
  t.equal(scriptRuns(), 2, 'one script run for each of the two accounts');
  const results = settled.slice(0, 5).map((s) => (s.status === 'fulfilled' ? s.value : s.reason));
  t.match(results, [
    { allowed: true, remaining: 2, balance: { kind: 'loaded', balance: 7 } },
    { allowed: true, remaining: 2, balance: { kind: 'not_loaded' } },
    { allowed: true, remaining: 1 },
    { allowed: true, remaining: 0 },
    { allowed: false, refusal: Refusal.RateLimited },
  ], 'each call decided as if alone, in the order made; the other account counted on its own');
  t.match(settled[5], { status: 'rejected', reason: TypeError }, 'a bad account id is refused alone');
  const [rate] = await plain.mget(gate.keys(a).rate);
  t.equal(rate, '3', 'only the allowed calls are counted');
});

t.test('a turn\'s rate-limit run is sent without waiting for the answer of an earlier turn\'s', async (t) => {
  // The client's replies are held (its socket not read) while two turns make their calls: both
  // runs must be on the wire before either is answered, so that during an outage each call fails
  // as soon as its own command does.
  const { plain, gate, scriptRuns, clear } = countingGate(t);
  await plain.ping();
  const account = newAccount();
  await fund(gate, account, 5);
  clear();
  const turn = () => new Promise((r) => setImmediate(r));
  const stream = (plain as unknown as { stream: { pause(): void; resume(): void } }).stream;
  stream.pause();
  const first = gate.rateLimit(account, 10);
  await turn();
  await turn();
  const second = gate.rateLimit(account, 10);
  await turn();
  await turn();
  t.equal(scriptRuns(), 2, 'the second turn\'s run is sent while the first is unanswered');
  stream.resume();
  t.match(await Promise.all([first, second]), [{ allowed: true, remaining: 9 }, { allowed: true, remaining: 8 }], 'each answered in order');
});

t.test('a rate window is opened by the first allowed call and given to a counter left without one', async (t) => {
  // What the script left, read in one transaction: the count and whether it expires (PTTL -1:
  // a counter without expiry, which would count, or refuse, forever). No timing is asserted:
  // a window is there, and it is no longer than one.
  const state = async (id: string) => {
    const key = redisGate.keys(id).rate;
    const [[, count], [, ttl]] = (await redis.multi().get(key).pttl(key).exec()) as [[null, string | null], [null, number]];
    return { count, expires: ttl !== -1, withinWindow: ttl <= RATE_WINDOW_MS };
  };
  const [fresh, stuck, full] = [newAccount(), newAccount(), newAccount()];
  t.match(await Promise.all([redisGate.rateLimit(fresh, 2), redisGate.rateLimit(fresh, 2), redisGate.rateLimit(fresh, 2)]), [
    { allowed: true, remaining: 1 }, { allowed: true, remaining: 0 }, { allowed: false, refusal: Refusal.RateLimited },
  ]);
  t.same(await state(fresh), { count: '2', expires: true, withinWindow: true }, 'the window opened with the first call; the refused one is not counted');
  // Counters without expiry (as an interrupted write could leave them): one below its limit,
  // one at it.
  await redis.set(redisGate.keys(stuck).rate, '1');
  await redis.set(redisGate.keys(full).rate, '3');
  t.match(await redisGate.rateLimit(stuck, 3), { allowed: true, remaining: 1 });
  t.match(await redisGate.rateLimit(full, 3), { allowed: false, refusal: Refusal.RateLimited, retryAfter: 60 });
  t.same(await state(stuck), { count: '2', expires: true, withinWindow: true }, 'the allowed call counted and gave the counter a window');
  t.same(await state(full), { count: '3', expires: true, withinWindow: true }, 'the refused call gave the counter a window and was not counted');
});
