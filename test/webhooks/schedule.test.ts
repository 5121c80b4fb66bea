// The retry schedule: ≈ 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 3 h, 6 h after tries 1–8, then the
// delivery is failed. Run end to end 10,000× faster (6 h → 2.16 s) against a receiver that
// always answers 500.
import t from 'tap';
import { startWorld, storeModes } from '../helpers/world.js';
import { MAX_ATTEMPTS, RETRY_DELAYS_S, retryDelayMs } from '../../src/webhooks/dispatcher.js';
import { retryAfterOf } from '../../src/webhooks/deliver.js';
import { startReceiver, sleep } from './receiver.js';

t.test('the delay after each failed try follows the schedule, scaled, and ends after try 9', async (t) => {
  t.same(RETRY_DELAYS_S, [5, 30, 120, 600, 1800, 3600, 10800, 21600]);
  t.equal(MAX_ATTEMPTS, 9);
  t.same([1, 2, 3, 4, 5, 6, 7, 8].map((n) => retryDelayMs(n, null, 1)), RETRY_DELAYS_S.map((s) => s * 1000));
  t.equal(retryDelayMs(1, null, 0.001), 5);
  t.equal(retryDelayMs(9, null, 1), null, 'no retry after the ninth try');
  t.equal(retryDelayMs(1, 120, 1), 120_000, 'Retry-After longer than the step wins');
  t.equal(retryDelayMs(3, 1, 1), 120_000, 'a shorter Retry-After does not bring the retry forward');
  t.equal(retryDelayMs(1, 999_999, 1), 21_600_000, 'Retry-After is capped at the longest step');
});

t.test('Retry-After is read as seconds or as an HTTP date', async (t) => {
  t.equal(retryAfterOf('120'), 120);
  t.equal(retryAfterOf(undefined), null);
  t.equal(retryAfterOf('soon'), null);
  const inAMinute = new Date(Date.now() + 60_000).toUTCString();
  t.ok(Math.abs(retryAfterOf(inAMinute)! - 60) <= 1);
  t.equal(retryAfterOf(new Date(Date.now() - 60_000).toUTCString()), 0, 'a past date means now');
});

for (const mode of storeModes()) {
  t.test(`a receiver that always fails gets nine tries, then the delivery is failed (${mode})`, async (t) => {
    const w = await startWorld(mode, { ALLOW_PRIVATE_NETWORK: '1', WEBHOOK_TIME_SCALE: '0.0001' });
    t.teardown(() => w.close());
    const rx = await startReceiver(Array.from({ length: 20 }, () => 500));
    t.teardown(() => rx.close());
    const hook = await (await w.req('POST', '/v1/webhooks', { json: { url: rx.url, eventTypes: ['conversion.completed'] } })).json() as { id: string };
    t.equal((await w.req('POST', '/v1/convert/markdown/html', { json: { markdown: 'fail me' } })).status, 200);
    const got = await rx.waitFor(9, 15_000);
    t.equal(new Set(got.map((g) => g.headers['webhook-id'])).size, 1, 'one event, nine tries');
    const gaps = got.slice(1).map((g, i) => g.at - got[i]!.at);
    t.ok(gaps[7]! >= 21_600_000 * 0.0001 * 0.9, `the last wait is ≈ 6 h scaled (${Math.round(gaps[7]!)} ms)`);
    t.ok(gaps[7]! > gaps[5]! && gaps[5]! > gaps[3]!, 'the waits grow');
    await sleep(500);
    t.equal(rx.received.length, 9, 'no tenth try');
    const log = (await (await w.req('GET', `/v1/webhooks/${hook.id}/deliveries`)).json() as { data: Array<{ attempt: number; status: string; next_retry_at: string | null }> }).data;
    t.same(log.map((a) => a.attempt), [9, 8, 7, 6, 5, 4, 3, 2, 1]);
    t.ok(log.every((a) => a.status === 'failed'));
    t.equal(log[0]!.next_retry_at, null, 'the last try names no retry');
    t.ok(log.slice(1).every((a) => a.next_retry_at !== null), 'the others do');
    const [row] = await w.db.sql`select status, attempts from webhook_deliveries`;
    t.match(row, { status: 'failed', attempts: 9 }, 'the delivery is failed');
  });
}
