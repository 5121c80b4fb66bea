// Webhook deliveries end to end against a real receiver on 127.0.0.1 (hence
// ALLOW_PRIVATE_NETWORK=1), with the retry schedule scaled down 100× (5 s → 50 ms, 30 s → 300 ms).
import t, { type Test } from 'tap';
import { startWorld, storeModes, type World } from '../helpers/world.js';
import { verifyWebhook } from '../../src/webhooks/verify.js';
import { startReceiver, sleep, type Answer, type Receiver } from './receiver.js';

const SCALE = 0.01;
const TIMEOUT_MS = 500;

interface Endpoint { id: string; secret: string; url: string; eventTypes: string[]; status: string }
interface Attempt { event_id: string; event_type: string; attempt: number; status: string; response_status: number | null; latency_ms: number; error: string | null; next_retry_at: string | null }

for (const mode of storeModes()) {
  t.test(`webhook deliveries (${mode})`, async (t) => {
    const w = await startWorld(mode, { ALLOW_PRIVATE_NETWORK: '1', WEBHOOK_TIME_SCALE: String(SCALE), WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) });
    t.teardown(() => w.close());

    /** A fresh account (its conversions reach only its endpoints), a receiver and an endpoint. */
    const setup = async (t: Test, script: Answer[], eventTypes = ['conversion.completed', 'conversion.failed']) => {
      const rx = await startReceiver(script);
      t.teardown(() => rx.close());
      const { key } = await w.newKey();
      const res = await w.req('POST', '/v1/webhooks', { key, json: { url: rx.url, eventTypes } });
      t.equal(res.status, 201, 'the endpoint is created');
      return { rx, key, hook: await res.json() as Endpoint };
    };
    const convert = async (key: string, markdown = '# Hello\n\nworld') => {
      const res = await w.req('POST', '/v1/convert/markdown/html', { key, json: { markdown } });
      if (res.status !== 200) throw new Error(`convert answered ${res.status}: ${await res.text()}`);
      return await res.json() as { id: string; status: string };
    };
    const attempts = async (key: string, id: string): Promise<Attempt[]> => {
      const res = await w.req('GET', `/v1/webhooks/${id}/deliveries`, { key });
      return (await res.json() as { data: Attempt[] }).data;
    };
    /** Attempts once `n` are recorded (the receiver sees a try before it is recorded). */
    const recorded = async (key: string, id: string, n: number): Promise<Attempt[]> => {
      for (let i = 0; i < 100; i++) {
        const a = await attempts(key, id);
        if (a.length >= n) return a;
        await sleep(30);
      }
      throw new Error(`fewer than ${n} attempts recorded`);
    };

    await t.test('a completed conversion delivers one signed event that the documented check accepts', async (t) => {
      const { rx, key, hook } = await setup(t, []);
      t.match(hook.secret, /^whsec_/);
      const conv = await convert(key);
      const [got] = await rx.waitFor(1);
      const event = verifyWebhook(hook.secret, got!.headers, got!.body) as {
        id: string; type: string; created_at: string; data: { object: { id: string; status: string; files: Array<{ content: unknown }> } };
      };
      t.equal(event.type, 'conversion.completed');
      t.match(event.id, /^evt_/);
      t.equal(got!.headers['webhook-id'], event.id, 'webhook-id is the event id');
      t.equal(event.data.object.id, conv.id);
      t.equal(event.data.object.status, 'completed');
      t.ok(event.data.object.files.length >= 2, 'the conversion carries its files');
      t.ok(event.data.object.files.every((f) => f.content === null), 'without their contents');
      t.match(got!.headers['content-type'], /^application\/json/);
      t.throws(() => verifyWebhook(hook.secret, got!.headers, got!.body.replace(conv.id, 'conv_forged')), 'a tampered body fails the check');
      const [a] = await recorded(key, hook.id, 1);
      t.match(a, { event_id: event.id, event_type: 'conversion.completed', attempt: 1, status: 'succeeded', response_status: 200, error: null, next_retry_at: null });
      t.ok(a!.latency_ms >= 0 && a!.latency_ms < TIMEOUT_MS, 'the latency is recorded');
      await sleep(300);
      t.equal(rx.received.length, 1, 'it is delivered once');
    });

    await t.test('a receiver answering 500 twice then 200 gets three tries with growing delays', async (t) => {
      const { rx, key, hook } = await setup(t, [500, 500, 200]);
      await convert(key);
      const got = await rx.waitFor(3);
      const ids = new Set(got.map((g) => g.headers['webhook-id']));
      t.equal(ids.size, 1, 'every try carries the same webhook-id');
      for (const g of got) t.doesNotThrow(() => verifyWebhook(hook.secret, g.headers, g.body), 'each try is signed');
      const first = got[1]!.at - got[0]!.at;
      const second = got[2]!.at - got[1]!.at;
      t.ok(first >= 5000 * SCALE * 0.9, `the first retry waited ≈ 5 s scaled (${Math.round(first)} ms)`);
      t.ok(second >= 30_000 * SCALE * 0.9, `the second retry waited ≈ 30 s scaled (${Math.round(second)} ms)`);
      t.ok(second > first, 'the delays grow');
      const log = await recorded(key, hook.id, 3);
      t.same(log.map((a) => [a.attempt, a.status, a.response_status]), [[3, 'succeeded', 200], [2, 'failed', 500], [1, 'failed', 500]], 'the log shows every try, newest first');
      t.ok(log[1]!.next_retry_at && log[2]!.next_retry_at, 'failed tries name their next retry');
      t.match(log[2]!.error, /HTTP 500/);
      const page1 = await (await w.req('GET', `/v1/webhooks/${hook.id}/deliveries?limit=2`, { key })).json() as { data: Attempt[]; next_cursor: string };
      t.same(page1.data.map((a) => a.attempt), [3, 2], 'limit=2 gives the two newest');
      const page2 = await (await w.req('GET', `/v1/webhooks/${hook.id}/deliveries?limit=2&cursor=${page1.next_cursor}`, { key })).json() as { data: Attempt[]; next_cursor: string | null };
      t.same(page2.data.map((a) => a.attempt), [1], 'the cursor gives the rest');
      t.equal(page2.next_cursor, null);
      await sleep(200);
      t.equal(rx.received.length, 3, 'nothing is sent after the success');
    });

    await t.test('a Retry-After on the answer delays the next try at least that long', async (t) => {
      const { rx, key } = await setup(t, [{ status: 503, headers: { 'retry-after': '60' } }, 200]);
      await convert(key);
      const got = await rx.waitFor(2);
      const gap = got[1]!.at - got[0]!.at;
      t.ok(gap >= 60_000 * SCALE * 0.9, `the retry waited ≈ 60 s scaled, not 5 s (${Math.round(gap)} ms)`);
    });

    await t.test('410 Gone disables the endpoint and nothing more is sent to it', async (t) => {
      const { rx, key, hook } = await setup(t, [410]);
      await convert(key);
      await rx.waitFor(1);
      const [a] = await recorded(key, hook.id, 1);
      t.match(a, { attempt: 1, status: 'failed', response_status: 410, next_retry_at: null });
      const list = await (await w.req('GET', '/v1/webhooks', { key })).json() as { data: Endpoint[] };
      t.match(list.data[0], { id: hook.id, status: 'disabled', disabled_reason: /410/ });
      await convert(key, 'again');
      await sleep(400);
      t.equal(rx.received.length, 1, 'a later conversion sends nothing to the disabled endpoint');
    });

    await t.test('a receiver that hangs is cut at the timeout and tried again', async (t) => {
      const { rx, key, hook } = await setup(t, ['hang', 200]);
      await convert(key);
      await rx.waitFor(2, 5000);
      const log = await recorded(key, hook.id, 2);
      const hung = log.find((a) => a.attempt === 1)!;
      t.match(hung, { status: 'failed', response_status: null, error: /timed out after 500 ms/ });
      // the message names the timeout that cut it; the receiver never answered, so nothing else could
      t.ok(hung.latency_ms >= TIMEOUT_MS * 0.9, `the try lasted the ${TIMEOUT_MS} ms timeout (${hung.latency_ms} ms)`);
      t.match(log.find((a) => a.attempt === 2), { status: 'succeeded', response_status: 200 });
    });

    await t.test('a failed conversion sends conversion.failed and a partly failed one conversion.completed, each only to its subscribers', async (t) => {
      const failed = await startReceiver();
      const completed = await startReceiver();
      t.teardown(() => Promise.all([failed.close(), completed.close()]));
      const { key } = await w.newKey();
      const f = await (await w.req('POST', '/v1/webhooks', { key, json: { url: failed.url, eventTypes: ['conversion.failed'] } })).json() as Endpoint;
      await w.req('POST', '/v1/webhooks', { key, json: { url: completed.url, eventTypes: ['conversion.completed'] } });
      // Nothing listens on port 1: the fetch fails, and with it the conversion's only source.
      const res = await w.req('POST', '/v1/convert/url', { key, json: { url: 'http://127.0.0.1:1/' } });
      const conv = await res.json() as { id: string; status: string };
      t.equal(conv.status, 'failed', 'the conversion failed');
      const [got] = await failed.waitFor(1);
      const event = verifyWebhook(f.secret, got!.headers, got!.body) as { type: string; data: { object: { id: string; status: string } } };
      t.equal(event.type, 'conversion.failed');
      t.match(event.data.object, { id: conv.id, status: 'failed' });
      await sleep(300);
      t.equal(completed.received.length, 0, 'the conversion.completed endpoint is not told');

      // One source fetched (any 200 answer converts as text), one not: completed_with_errors.
      const page = await startReceiver();
      t.teardown(() => page.close());
      const mixed = await (await w.req('POST', '/v1/convert/url', { key, json: { urls: [page.url, 'http://127.0.0.1:1/'] } })).json() as { id: string; status: string };
      t.equal(mixed.status, 'completed_with_errors');
      const [c] = await completed.waitFor(1);
      t.match(JSON.parse(c!.body), { type: 'conversion.completed', data: { object: { id: mixed.id, status: 'completed_with_errors' } } },
        'completed_with_errors is sent as conversion.completed');
      await sleep(200);
      t.equal(failed.received.length, 1, 'and not as conversion.failed');
      t.equal(completed.received.length, 1, 'two sources finishing make one event');
    });

    await t.test('the test call sends a signed webhook.test event at once and answers with the try', async (t) => {
      const { rx, key, hook } = await setup(t, []);
      const res = await w.req('POST', `/v1/webhooks/${hook.id}/test`, { key });
      t.equal(res.status, 200);
      const a = await res.json() as Attempt;
      t.match(a, { event_type: 'webhook.test', attempt: 1, status: 'succeeded', response_status: 200, next_retry_at: null });
      t.equal(rx.received.length, 1, 'the receiver has it before the answer');
      const event = verifyWebhook(hook.secret, rx.received[0]!.headers, rx.received[0]!.body) as { id: string; type: string; data: { object: { id: string; secret?: string } } };
      t.match(event, { id: a.event_id, type: 'webhook.test', data: { object: { id: hook.id } } });
      t.notOk('secret' in event.data.object, 'the test event does not carry the secret');
      t.match(await attempts(key, hook.id), [{ event_id: a.event_id, event_type: 'webhook.test' }], 'the try is in the log');

      const down = await startReceiver([500]);
      const { key: k2 } = await w.newKey();
      const h2 = await (await w.req('POST', '/v1/webhooks', { key: k2, json: { url: down.url, eventTypes: ['conversion.completed'] } })).json() as Endpoint;
      const bad = await (await w.req('POST', `/v1/webhooks/${h2.id}/test`, { key: k2 })).json() as Attempt;
      await down.close();
      t.match(bad, { status: 'failed', response_status: 500, error: /HTTP 500/ }, 'a failing receiver is reported as such');
    });
  });
}
