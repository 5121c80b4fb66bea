// Webhook endpoints: create (strict body, the SSRF guard, the secret shown once), list, delete,
// and who may do it (scope webhooks, an active subscription, one's own endpoints only).
// This world does not set ALLOW_PRIVATE_NETWORK; targets are public IP literals (no DNS needed).
import t, { type Test } from 'tap';
import { oneMode, PROBLEM_FIELDS, startWorld } from '../helpers/world.js';
import { createEndpoint } from '../../src/webhooks/store.js';
import { startReceiver, sleep } from './receiver.js';

const PUBLIC = 'https://93.184.215.14/hooks/docpipe';

for (const mode of oneMode()) {
  t.test(`webhook endpoints (${mode})`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());

    const problem = async (t: Test, res: Response, status: number, code: string) => {
      t.equal(res.status, status, `status ${status}`);
      t.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      const p = await res.json() as Record<string, unknown>;
      for (const f of PROBLEM_FIELDS) t.ok(f in p, `problem has ${f}`);
      t.equal(p.error, code);
      return p as { detail: string };
    };
    const create = (json: unknown, key?: string) => w.req('POST', '/v1/webhooks', { key, json });

    await t.test('creating an endpoint answers 201 with its secret, shown only then', async (t) => {
      const { key } = await w.newKey();
      const res = await create({ url: PUBLIC, eventTypes: ['conversion.completed'] }, key);
      t.equal(res.status, 201);
      const hook = await res.json() as Record<string, unknown>;
      t.match(hook, { id: /^wh_/, object: 'webhook_endpoint', url: PUBLIC, eventTypes: ['conversion.completed'], secret: /^whsec_[A-Za-z0-9+/=]+$/, status: 'enabled' });
      t.ok(!Number.isNaN(Date.parse(hook.created_at as string)), 'created_at is a date');
      const list = await (await w.req('GET', '/v1/webhooks', { key })).json() as { object: string; data: Array<Record<string, unknown>> };
      t.equal(list.object, 'list');
      t.equal(list.data.length, 1);
      t.match(list.data[0], { id: hook.id, url: PUBLIC, eventTypes: ['conversion.completed'], status: 'enabled' });
      t.notOk('secret' in list.data[0]!, 'the list never shows the secret');
      const second = await (await create({ url: PUBLIC, eventTypes: ['conversion.completed'] }, key)).json() as { secret: string };
      t.not(second.secret, hook.secret, 'every endpoint has its own secret');
    });

    await t.test('a loopback or private target is refused with a clear 400', async (t) => {
      for (const url of ['http://127.0.0.1:8080/hook', 'http://localhost/hook', 'http://10.1.2.3/hook', 'http://[::1]/hook', 'http://169.254.169.254/latest/meta-data']) {
        const p = await problem(t, await create({ url, eventTypes: ['conversion.failed'] }), 400, 'invalid_request');
        t.match(p.detail, /"url" is not allowed/, `${url} is refused`);
        t.match(p.detail, /ALLOW_PRIVATE_NETWORK/, 'the detail says how a self-hosted server allows it');
      }
      const p = await problem(t, await create({ url: 'http://127.0.0.1:8080/hook', eventTypes: ['conversion.failed'] }), 400, 'invalid_request');
      t.match(p.detail, /loopback/, 'the detail names the address class');
      const list = await (await w.req('GET', '/v1/webhooks')).json() as { data: unknown[] };
      t.equal(list.data.length, 0, 'nothing was created');
    });

    await t.test('the body is validated strictly', async (t) => {
      const cases: Array<[string, unknown, RegExp]> = [
        ['a missing url', { eventTypes: ['conversion.completed'] }, /"url"/],
        ['a url that is not a string', { url: 42, eventTypes: ['conversion.completed'] }, /"url"/],
        ['a url that does not parse', { url: 'not a url', eventTypes: ['conversion.completed'] }, /"url"/],
        ['an ftp url', { url: 'ftp://93.184.215.14/x', eventTypes: ['conversion.completed'] }, /http and https/],
        ['a url with credentials', { url: 'https://u:p@93.184.215.14/x', eventTypes: ['conversion.completed'] }, /credentials/],
        ['missing eventTypes', { url: PUBLIC }, /"eventTypes"/],
        ['empty eventTypes', { url: PUBLIC, eventTypes: [] }, /non-empty/],
        ['eventTypes as a string', { url: PUBLIC, eventTypes: 'conversion.completed' }, /"eventTypes"/],
        ['an unknown event type', { url: PUBLIC, eventTypes: ['job.completed'] }, /job\.completed/],
        ['a repeated event type', { url: PUBLIC, eventTypes: ['conversion.failed', 'conversion.failed'] }, /twice/],
        ['an unknown field', { url: PUBLIC, eventTypes: ['conversion.failed'], secret: 'mine' }, /Unknown field\(s\): secret/],
        ['snake_case event_types', { url: PUBLIC, event_types: ['conversion.failed'] }, /event_types/],
        ['a body that is not an object', ['conversion.failed'], /JSON object/],
      ];
      for (const [name, body, detail] of cases) {
        const p = await problem(t, await create(body), 400, 'invalid_request');
        t.match(p.detail, detail, name);
      }
      const res = await w.req('POST', '/v1/webhooks', { body: 'url=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      await problem(t, res, 400, 'invalid_request');
    });

    await t.test('deleting an endpoint removes it; a second delete is 404', async (t) => {
      const { key } = await w.newKey();
      const hook = await (await create({ url: PUBLIC, eventTypes: ['conversion.failed'] }, key)).json() as { id: string };
      const res = await w.req('DELETE', `/v1/webhooks/${hook.id}`, { key });
      t.equal(res.status, 200);
      t.same(await res.json(), { id: hook.id, object: 'webhook_endpoint', deleted: true });
      t.same((await (await w.req('GET', '/v1/webhooks', { key })).json() as { data: unknown[] }).data, []);
      await problem(t, await w.req('DELETE', `/v1/webhooks/${hook.id}`, { key }), 404, 'not_found');
      await problem(t, await w.req('GET', `/v1/webhooks/${hook.id}/deliveries`, { key }), 404, 'not_found');
    });

    await t.test('another account\'s endpoint is 404 everywhere and is not listed', async (t) => {
      const owner = await w.newKey();
      const other = await w.newKey();
      const hook = await (await create({ url: PUBLIC, eventTypes: ['conversion.failed'] }, owner.key)).json() as { id: string };
      for (const [method, path] of [['DELETE', `/v1/webhooks/${hook.id}`], ['GET', `/v1/webhooks/${hook.id}/deliveries`], ['POST', `/v1/webhooks/${hook.id}/test`]] as const) {
        await problem(t, await w.req(method, path, { key: other.key }), 404, 'not_found');
      }
      t.same((await (await w.req('GET', '/v1/webhooks', { key: other.key })).json() as { data: unknown[] }).data, []);
      t.equal((await (await w.req('GET', '/v1/webhooks', { key: owner.key })).json() as { data: unknown[] }).data.length, 1, 'the owner still has it');
    });

    await t.test('a key without the webhooks scope gets 403 scope_missing', async (t) => {
      const { key } = await w.newKey({ scopes: ['read', 'convert'] });
      for (const [method, path] of [['POST', '/v1/webhooks'], ['GET', '/v1/webhooks'], ['DELETE', '/v1/webhooks/wh_x'], ['GET', '/v1/webhooks/wh_x/deliveries'], ['POST', '/v1/webhooks/wh_x/test']] as const) {
        const p = await problem(t, await w.req(method, path, { key, json: method === 'POST' ? { url: PUBLIC, eventTypes: ['conversion.failed'] } : undefined }), 403, 'scope_missing');
        t.match(p.detail, /webhooks/, `${method} ${path}`);
      }
    });

    await t.test('no key is 401; a lapsed subscription is 403 subscription_required', async (t) => {
      await problem(t, await w.req('GET', '/v1/webhooks', { key: null }), 401, 'unauthorized');
      const { key } = await w.newKey({ plan: 'lite', subscription: 'past_due' });
      await problem(t, await create({ url: PUBLIC, eventTypes: ['conversion.failed'] }, key), 403, 'subscription_required');
    });

    await t.test('an account has at most 20 endpoints', async (t) => {
      const { key } = await w.newKey();
      for (let i = 0; i < 20; i++) t.equal((await create({ url: `${PUBLIC}/${i}`, eventTypes: ['conversion.failed'] }, key)).status, 201);
      const p = await problem(t, await create({ url: PUBLIC, eventTypes: ['conversion.failed'] }, key), 400, 'invalid_request');
      t.match(p.detail, /at most 20/);
    });

    await t.test('a target that turned private since its creation is refused at delivery', async (t) => {
      const rx = await startReceiver();
      t.teardown(() => rx.close());
      const { key, accountId } = await w.newKey();
      // As if its name now resolved to loopback: the row is written past the creation check.
      const hook = await createEndpoint(w.db.sql, accountId, rx.url, ['conversion.completed']);
      t.equal((await w.req('POST', '/v1/convert/markdown/html', { key, json: { markdown: 'x' } })).status, 200);
      let log: Array<{ status: string; error: string | null; next_retry_at: string | null }> = [];
      for (let i = 0; i < 100 && log.length === 0; i++) {
        await sleep(30);
        log = (await (await w.req('GET', `/v1/webhooks/${hook.id}/deliveries`, { key })).json() as { data: typeof log }).data;
      }
      t.match(log, [{ status: 'failed', error: /loopback/ }], 'the try is refused by the guard');
      t.ok(log[0]?.next_retry_at, 'and retried later (DNS may change back)');
      t.equal(rx.received.length, 0, 'the private address was never reached');
    });

    await t.test('the deliveries list checks its limit and cursor', async (t) => {
      const { key } = await w.newKey();
      const hook = await (await create({ url: PUBLIC, eventTypes: ['conversion.failed'] }, key)).json() as { id: string };
      const empty = await (await w.req('GET', `/v1/webhooks/${hook.id}/deliveries`, { key })).json();
      t.same(empty, { object: 'list', data: [], next_cursor: null });
      await problem(t, await w.req('GET', `/v1/webhooks/${hook.id}/deliveries?limit=0`, { key }), 400, 'invalid_request');
      await problem(t, await w.req('GET', `/v1/webhooks/${hook.id}/deliveries?cursor=nope`, { key }), 400, 'invalid_request');
    });
  });
}
