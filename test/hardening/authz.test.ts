// Every route of the route table (app.router.list(), so a route added later is covered without
// touching this file) is checked three ways: without a key (401), with a key that has no scope
// (403 scope_missing), and with another account's full key on this account's ids (404
// not_found — never 403, never the data). Only the operational routes answer without a key.
import t from 'tap';
import { oneMode, startWorld } from '../helpers/world.js';

const PUBLIC = new Set(['GET /healthz', 'GET /readyz', 'GET /metrics', 'GET /v1/openapi.json']);

/** A body a handler may want before it looks anything up: enough to get past parsing. */
function bodyFor(method: string, pattern: string): { body?: string; headers: Record<string, string> } {
  if (method === 'PUT') return { body: 'x', headers: { 'content-type': 'application/octet-stream' } };
  if (method !== 'POST') return { headers: {} };
  if (pattern.endsWith('/complete')) return { body: JSON.stringify({ parts: [{ number: 1, etag: 'x' }] }), headers: { 'content-type': 'application/json' } };
  if (pattern === '/v1/uploads') return { body: JSON.stringify({ bytes: 1, name: 'a.txt' }), headers: { 'content-type': 'application/json' } };
  if (pattern === '/v1/webhooks') return { body: JSON.stringify({ url: 'http://127.0.0.1:9/hook', eventTypes: ['conversion.completed'] }), headers: { 'content-type': 'application/json' } };
  if (pattern.startsWith('/v1/convert/')) return { body: JSON.stringify({ text: 'x', markdown: undefined }), headers: { 'content-type': 'application/json' } };
  return { headers: { 'content-type': 'application/json' }, body: '{}' };
}

for (const mode of oneMode()) {
  t.test(`authorization on every route (${mode})`, async (t) => {
    // Webhook targets on loopback are allowed here only so that one can be created without DNS.
    const w = await startWorld(mode, { SWEEP_INTERVAL_S: '0', ALLOW_PRIVATE_NETWORK: '1' });
    t.teardown(() => w.close());
    const routes = w.app.router.list();
    t.ok(routes.length >= 30, `${routes.length} routes in the table`);

    // Account A's resources: a conversion with files, an upload, a webhook endpoint.
    const conv = await (await w.req('POST', '/v1/convert/text', { json: { text: 'SECRET-OF-ACCOUNT-A' } })).json() as { id: string; files: Array<{ id: string }> };
    const upload = await (await w.req('POST', '/v1/uploads', { json: { bytes: 10, name: 'a.txt' } })).json() as { id: string };
    const hook = await (await w.req('POST', '/v1/webhooks', { json: { url: 'http://127.0.0.1:9/hook', eventTypes: ['conversion.completed'] } })).json() as { id: string };
    t.ok(conv.id && upload.id && hook.id, 'account A has a conversion, an upload and a webhook');
    const idFor = (pattern: string): string => (pattern.startsWith('/v1/uploads') ? upload.id : pattern.startsWith('/v1/webhooks') ? hook.id : conv.id);
    const fill = (pattern: string): string => pattern
      .replace(':id', idFor(pattern)).replace(':fileId', conv.files[0]!.id).replace(':number', '1');

    const noScope = await w.newKey({ scopes: [] });
    const other = await w.newKey();

    for (const r of routes) {
      const name = `${r.method} ${r.pattern}`;
      const target = fill(r.pattern);
      const send = (key: string | null) => w.req(r.method, target, { key, ...bodyFor(r.method, r.pattern) });
      if (PUBLIC.has(name)) {
        t.equal((await send(null)).status, 200, `${name} answers without a key`);
        continue;
      }
      const anon = await send(null);
      t.equal(anon.status, 401, `${name} without a key: 401`);
      t.equal((await anon.json() as { error: string }).error, 'unauthorized');

      const scoped = await send(noScope.key);
      t.equal(scoped.status, 403, `${name} with a key lacking the scope: 403`);
      t.equal((await scoped.json() as { error: string }).error, 'scope_missing', name);

      if (!r.pattern.includes(':')) continue;
      const foreign = await send(other.key);
      const text = await foreign.text();
      t.equal(foreign.status, 404, `${name} on another account's id: 404 (got ${foreign.status} ${text.slice(0, 120)})`);
      t.notMatch(text, /SECRET-OF-ACCOUNT-A|127\.0\.0\.1:9\/hook|"a\.txt"/, `${name}: none of account A's data`);
    }

    // Nothing of A changed: B's DELETE calls found nothing to delete.
    t.equal((await w.req('GET', `/v1/conversions/${conv.id}`)).status, 200, 'A still has its conversion');
    t.equal((await w.req('GET', `/v1/uploads/${upload.id}`)).status, 200, 'A still has its upload');
    const hooks = await (await w.req('GET', '/v1/webhooks')).json() as { data: Array<{ id: string }> };
    t.ok(hooks.data.some((h) => h.id === hook.id), 'A still has its webhook');
  });
}
