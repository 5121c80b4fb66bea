import t from 'tap';
import { Redis } from 'ioredis';
import { REDIS_URL, deletePrefix, startWorld } from '../helpers/world.js';
import { startRelay } from '../helpers/relay.js';

t.test('with Redis unreachable, credit-spending requests answer 503 service_unavailable, retryable', async (t) => {
  const r = await startRelay(6379);
  t.teardown(() => r.close());
  const prefix = `test:down:${r.port}:`;
  const w = await startWorld('postgres', { REDIS_URL: `redis://127.0.0.1:${r.port}`, REDIS_PREFIX: prefix });
  t.teardown(async () => {
    await w.close();
    // The gate's keys from before the cut, written through the relay: removed on Redis itself.
    const redis = new Redis(REDIS_URL);
    await deletePrefix(redis, prefix);
    await redis.quit();
  });
  t.equal((await w.req('POST', '/v1/convert/text', { json: { text: 'with the gate' } })).status, 200, 'works while Redis answers');
  await r.cut();
  // Answered, not left hanging on the gate (a hang ends the test at tap's timeout).
  const res = await w.req('POST', '/v1/convert/text', { json: { text: 'no gate' } });
  t.equal(res.status, 503);
  const p = await res.json() as { error: string; retryable: boolean };
  t.equal(p.error, 'service_unavailable');
  t.equal(p.retryable, true);
  t.equal((await w.req('GET', '/readyz', { key: null })).status, 503, 'readyz says so too');
  const [n] = await w.db.sql`select count(*)::int as n from conversions`;
  t.equal(n!.n, 1, 'nothing was created while Redis was away');
});
