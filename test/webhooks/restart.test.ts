// Webhook deliveries live in the database, not in a process: a retry pending when the server
// stops is made by the next server on the same database, and a try whose outcome was never
// recorded (the process died between sending and recording) is sent again with the same
// webhook-id. The retry schedule runs at its real pace here (the first retry is 5 s away).
import t from 'tap';
import { startWorld, storeModes } from '../helpers/world.js';
import { startApp, type RunningApp } from '../../src/server/app.js';
import { createLogger } from '../../src/log.js';
import { verifyWebhook } from '../../src/webhooks/verify.js';
import { enqueueConversionEvent } from '../../src/webhooks/outbox.js';
import { claimDue } from '../../src/webhooks/store.js';
import { createSender } from '../../src/webhooks/deliver.js';
import { startReceiver, sleep } from './receiver.js';

interface Attempt { event_id: string; attempt: number; status: string; response_status: number | null; next_retry_at: string | null }

for (const mode of storeModes()) {
  t.test(`webhooks across restarts (${mode})`, async (t) => {
    const w = await startWorld(mode, { ALLOW_PRIVATE_NETWORK: '1' });
    // The world's close() closes its first app again: make that a no-op once the test did it.
    const closeFirst = w.app.close.bind(w.app);
    let firstClosed: Promise<void> | undefined;
    w.app.close = () => (firstClosed ??= closeFirst());
    const apps: RunningApp[] = [];
    t.teardown(async () => {
      for (const a of apps) await a.close();
      await w.close();
    });
    const restart = async (): Promise<string> => {
      const app = await startApp(w.config, { db: w.db, log: createLogger('silent') });
      apps.push(app);
      return `http://127.0.0.1:${app.port}`;
    };
    const call = (base: string, method: string, p: string, key: string, json?: unknown) => fetch(base + p, {
      method, headers: { 'x-api-key': key, ...(json ? { 'content-type': 'application/json' } : {}) },
      body: json ? JSON.stringify(json) : undefined,
    });

    await t.test('a retry pending when the server stops is made by the next server', async (t) => {
      const rx = await startReceiver([500, 200]);
      t.teardown(() => rx.close());
      const { key } = await w.newKey();
      const hook = await (await w.req('POST', '/v1/webhooks', { key, json: { url: rx.url, eventTypes: ['conversion.completed'] } })).json() as { id: string; secret: string };
      const wakes = w.app.webhooks.wakes;
      const res = await w.req('POST', '/v1/convert/markdown/html', { key, json: { markdown: 'restart me' } });
      t.equal(res.status, 200);
      await rx.waitFor(1, 30_000);
      const firstAt = Date.now() - (performance.now() - rx.received[0]!.at);
      // the enqueuing process wakes its own loop instead of waiting for the next poll
      t.ok(w.app.webhooks.wakes > wakes, 'the event woke the dispatcher of the process that enqueued it');
      let log: Attempt[] = [];
      for (let i = 0; i < 50 && log.length === 0; i++) {
        await sleep(20);
        log = (await (await w.req('GET', `/v1/webhooks/${hook.id}/deliveries`, { key })).json() as { data: Attempt[] }).data;
      }
      t.match(log, [{ attempt: 1, status: 'failed', response_status: 500 }], 'the failed try is recorded');
      const due = Date.parse(log[0]!.next_retry_at!);
      t.ok(due - firstAt > 3000, `its retry is scheduled about 5 s after the first try (${Math.round(due - firstAt)} ms)`);

      await w.app.close();
      await sleep(due - Date.now() + 300);
      t.equal(rx.received.length, 1, 'nothing is sent while no server runs');

      const started = performance.now();
      const base = await restart();
      // a generous wait: only a new server that never sends the retry reaches it
      const got = await rx.waitFor(2, 30_000);
      t.ok(got[1]!.at > started, 'the new server sends the overdue retry');
      t.equal(got[1]!.headers['webhook-id'], got[0]!.headers['webhook-id'], 'with the same webhook-id');
      t.doesNotThrow(() => verifyWebhook(hook.secret, got[1]!.headers, got[1]!.body), 'signed afresh');
      await sleep(100);
      const after = (await (await call(base, 'GET', `/v1/webhooks/${hook.id}/deliveries`, key)).json() as { data: Attempt[] }).data;
      t.match(after, [{ attempt: 2, status: 'succeeded', response_status: 200 }, { attempt: 1, status: 'failed' }]);
    });

    await t.test('a try never recorded (the sender died) is sent again with the same webhook-id', async (t) => {
      const rx = await startReceiver();
      t.teardown(() => rx.close());
      const base = apps.length ? `http://127.0.0.1:${apps[apps.length - 1]!.port}` : await restart();
      const { key } = await w.newKey();
      const conv = await (await call(base, 'POST', '/v1/convert/markdown/html', key, { markdown: 'twice' })).json() as { id: string };
      const hook = await (await call(base, 'POST', '/v1/webhooks', key, { url: rx.url, eventTypes: ['conversion.completed'] })).json() as { id: string; secret: string };
      for (const a of apps) await a.close();
      apps.length = 0;

      // Play the process that dies: enqueue, claim with a short lease, send, and never record.
      const eventId = await w.db.sql.begin((tx) => enqueueConversionEvent(tx as never, conv.id));
      t.match(eventId, /^evt_/);
      const claimed = await claimDue(w.db.sql, 10, 400);
      t.equal(claimed.length, 1, 'the dying process claimed the delivery');
      const sender = createSender({ allowPrivateNetwork: true, timeoutMs: 2000 });
      const sent = await sender.send(claimed[0]!.url, claimed[0]!.secret, claimed[0]!.eventId, claimed[0]!.body);
      await sender.close();
      t.ok(sent.ok, 'and sent it');

      await restart();
      const got = await rx.waitFor(2, 30_000);
      t.equal(got[1]!.headers['webhook-id'], eventId, 'the next server sends it again once the lease is over');
      t.equal(got[1]!.body, got[0]!.body, 'the same body');
      t.doesNotThrow(() => verifyWebhook(hook.secret, got[1]!.headers, got[1]!.body));
      await sleep(150);
      const log = (await (await call(`http://127.0.0.1:${apps[0]!.port}`, 'GET', `/v1/webhooks/${hook.id}/deliveries`, key)).json() as { data: Attempt[] }).data;
      t.match(log, [{ event_id: eventId, attempt: 2, status: 'succeeded' }], 'the log holds the recorded try (the lost one counted)');
      t.equal(rx.received.length, 2, 'and nothing more is sent');
    });
  });
}
