// Redis restarted under load. The server reaches Redis (the billing gate) through a relay the test
// cuts for a few seconds while workers submit paid and free conversions, some with respond-async
// and Idempotency-Key retries; two kinds of restart:
// - empty (no persistence, or FLUSHALL): the test also deletes this world's keys — only its own
//   prefix, never the shared Redis — so every balance must be rebuilt from the ledger;
// - with its data (AOF, as docker-compose runs it, or a network partition): the keys survive, and
//   whatever the gate was not told while it was away must not stay wrong.
// While Redis is away requests answer 503 service_unavailable (retryable); afterwards every
// accepted conversion ends, and the gate's copy of each balance equals the ledger's: no credit
// created or lost, no reservation (concurrency slot) left behind.
import t from 'tap';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';

process.env.JOB_LEASE_S = '3';
// Reservations out of line with the ledger are mended after 2 s instead of 30 (src/billing/audit.ts).
process.env.GATE_AUDIT_GRACE_S = '2';
const { startWorld, deletePrefix, REDIS_URL } = await import('../helpers/world.js');
const { startRelay } = await import('../helpers/relay.js');
const { startLoad, acceptedIds, awaitTerminal } = await import('../../bench/chaos/load.js');
const { checkInvariants } = await import('../../bench/chaos/invariants.js');

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

for (const restart of ['empty', 'with its data'] as const) {
  t.test(`Redis restarted ${restart} under load: 503 while away, balances match the ledger after`, async (t) => {
    const relay = await startRelay(Number(new URL(REDIS_URL).port || 6379));
    const prefix = `test:redis-restart:${randomBytes(5).toString('hex')}:`;
    const redis = new Redis(REDIS_URL);
    const w = await startWorld('postgres', {
      REDIS_URL: `redis://127.0.0.1:${relay.port}`, REDIS_PREFIX: prefix,
      PLAN_OVERRIDES: JSON.stringify({ max: { concurrency: 1000 } }),
    }, { plan: 'max' });
    t.teardown(async () => {
      await relay.restore();
      await w.close();
      await relay.close();
      await deletePrefix(redis, prefix);
      await redis.quit();
    });
    const accounts = [{ accountId: w.accountId, key: w.key }, await w.newKey({ plan: 'max' }), await w.newKey({ plan: 'max' })];
    const grantedBefore = new Map<string, number>();
    for (const a of accounts) grantedBefore.set(a.accountId, (await w.app.deps.ledger.balance(a.accountId)));

    const load = startLoad({
      origins: () => [w.url], accounts, workers: 12, timeoutMs: 20_000, waitS: 10, seed: 7, docs: [],
      mix: { markdown: 3, html: 4, text: 2, idempotent: 2, delete: 1 },
    });
    await sleep(2_000);
    const cutAt = Date.now();
    await relay.cut();
    if (restart === 'empty') await deletePrefix(redis, prefix);
    await sleep(5_000);
    const restoredAt = Date.now();
    await relay.restore();
    await sleep(3_000);
    await load.stop();
    const sent = load.sent;

    await t.test('while Redis is away, requests answer 503 service_unavailable, retryable; never 500, never a hang', async (t) => {
      t.same(sent.filter((r) => ![200, 202, 404, 503].includes(r.status)).map((r) => `${r.op} → ${r.status} ${r.error ?? ''}`), [],
        'only 200, 202, 404 (a delete of a conversion deleted already) and 503');
      // A delete of a free (render) conversion needs no gate: it may succeed while Redis is away.
      const during = sent.filter((r) => r.startedAt >= cutAt + 200 && r.startedAt + r.ms <= restoredAt && r.op !== 'delete');
      t.ok(during.length >= 10, `${during.length} requests answered during the outage`);
      t.same(during.filter((r) => r.status !== 503 || r.error !== 'service_unavailable' || r.retryable !== true)
        .map((r) => `${r.op} → ${r.status} ${r.error ?? ''}`), [], 'all of them 503 service_unavailable, retryable');
      t.ok(sent.some((r) => r.startedAt > restoredAt + 500 && r.status === 200), 'paid and free requests succeed again after');
    });

    await t.test('every accepted conversion ends; the gate holds what the ledger says', async (t) => {
      const { live, deleteSent } = acceptedIds(sent);
      t.ok(live.size > 30, `${live.size} conversions accepted`);
      t.same(await awaitTerminal(() => w.url, accounts, live, deleteSent, 30_000), [], 'all terminal');
      const ids = accounts.map((a) => a.accountId);
      let checks = await checkInvariants({ sql: w.db.sql, accountIds: ids, sent, gate: w.app.deps.gate });
      // Settles lost while Redis was away are redone within the settle sweep's period (10 s).
      for (let i = 0; i < 60 && checks.some((c) => c.violations > 0); i++) {
        await sleep(500);
        checks = await checkInvariants({ sql: w.db.sql, accountIds: ids, sent, gate: w.app.deps.gate });
      }
      for (const c of checks) t.equal(c.violations, 0, `${c.name} (${c.checked} checked) ${c.examples.join('; ')}`);
      for (const a of accounts) {
        const [r] = await w.db.sql`select coalesce(-sum(amount), 0)::int as charged from ledger where account_id = ${a.accountId} and kind = 'charge'`;
        t.equal(await w.app.deps.ledger.balance(a.accountId), grantedBefore.get(a.accountId)! - r!.charged,
          `${a.accountId}: balance = before − charged (${r!.charged})`);
      }
    });
  });
}
