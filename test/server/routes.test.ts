import t from 'tap';
import { startWorld } from '../helpers/world.js';
import { loadUws } from '../../src/server/uws.js';

t.test('start-up refuses the slow JS fallback of uWebSockets.js', async (t) => {
  t.equal(typeof loadUws().App, 'function', 'the native binary loads');
  process.env.UWS_USE_FALLBACK = '1';
  try {
    t.throws(() => loadUws(), /native binary/);
  } finally {
    delete process.env.UWS_USE_FALLBACK;
  }
});

t.test('the route table', async (t) => {
  const w = await startWorld('postgres');
  t.teardown(() => w.close());

  await t.test('an unknown path is 404 problem+json', async (t) => {
    const res = await w.req('GET', '/v1/nothing-here');
    t.equal(res.status, 404);
    t.equal((await res.json() as { error: string }).error, 'not_found');
  });

  await t.test('a known path with another method is 405 with Allow', async (t) => {
    const res = await w.req('PATCH', '/v1/conversions');
    t.equal(res.status, 405);
    t.equal(res.headers.get('allow'), 'GET');
    t.equal((await res.json() as { error: string }).error, 'method_not_allowed');
  });

  await t.test('health answers without a key and readiness checks Postgres', async (t) => {
    const h = await w.req('GET', '/healthz', { key: null });
    t.equal(h.status, 200);
    const r = await w.req('GET', '/readyz', { key: null });
    t.equal(r.status, 200);
    t.match(await r.json(), { status: 'ready', postgres: 'ok' });
  });

  await t.test('a request id given by the client is echoed, otherwise one is made', async (t) => {
    const a = await w.req('GET', '/healthz', { headers: { 'x-request-id': 'abc-123' } });
    t.equal(a.headers.get('x-request-id'), 'abc-123');
    const b = await w.req('GET', '/healthz');
    t.match(b.headers.get('x-request-id'), /^req_/);
  });

  await t.test('every route of the spec is registered', async (t) => {
    const have = new Set(w.app.router.list().map((r) => `${r.method} ${r.pattern}`));
    const kinds = ['pdf', 'image', 'word', 'excel', 'powerpoint', 'html', 'url', 'text', 'markdown/html', 'markdown/text'];
    for (const k of kinds) {
      t.ok(have.has(`POST /v1/convert/${k}`), k);
      t.ok(have.has(`POST /v1/convert/${k}/estimate`), `${k} estimate`);
    }
    for (const r of ['GET /v1/conversions', 'DELETE /v1/conversions/:id', 'POST /v1/uploads', 'POST /v1/uploads/:id/complete', 'POST /v1/webhooks']) {
      t.ok(have.has(r), r);
    }
  });
});
