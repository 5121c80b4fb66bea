import t, { type Test } from 'tap';
import { oneMode, PROBLEM_FIELDS, startWorld } from '../helpers/world.js';
import { revokeKey, findKey } from '../../src/store/accounts.js';

for (const mode of oneMode()) {
  t.test(`auth (${mode})`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    const body = { text: '# hi' };

    const expectProblem = async (t: Test, res: Response, status: number, code: string) => {
      t.equal(res.status, status, `status ${status} for ${code}`);
      t.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      const p = await res.json() as Record<string, unknown>;
      for (const f of PROBLEM_FIELDS) t.ok(f in p, `problem has ${f}`);
      t.equal(p.error, code);
      t.equal(p.status, status);
      t.equal(p.request_id, res.headers.get('x-request-id'));
      return p;
    };

    await t.test('a request without a key is 401 unauthorized', async (t) => {
      await expectProblem(t, await w.req('POST', '/v1/convert/markdown/html', { key: null, json: body }), 401, 'unauthorized');
    });

    await t.test('an unknown key is 401 unauthorized', async (t) => {
      await expectProblem(t, await w.req('POST', '/v1/convert/markdown/html', { key: 'dp_live_nope', json: body }), 401, 'unauthorized');
    });

    await t.test('a revoked key is 401 unauthorized', async (t) => {
      const k = await w.newKey();
      const rec = await findKey(w.db.sql, k.key);
      t.ok(await revokeKey(w.db.sql, rec!.keyId));
      await expectProblem(t, await w.req('POST', '/v1/convert/markdown/html', { key: k.key, json: body }), 401, 'unauthorized');
    });

    await t.test('the key is taken from Authorization: Bearer as well as x-api-key', async (t) => {
      const res = await w.req('POST', '/v1/convert/markdown/html', { key: null, json: body, headers: { authorization: `Bearer ${w.key}` } });
      t.equal(res.status, 200);
      t.match((await res.json() as { files: Array<{ content: string | null }> }).files[1]!.content, '<h1>hi</h1>');
    });

    await t.test('a key without the convert scope gets 403 scope_missing on submit', async (t) => {
      const k = await w.newKey({ scopes: ['read'] });
      const p = await expectProblem(t, await w.req('POST', '/v1/convert/markdown/html', { key: k.key, json: body }), 403, 'scope_missing');
      t.match(p.detail, 'convert');
    });

    await t.test('a key without the read scope gets 403 scope_missing on reads', async (t) => {
      const k = await w.newKey({ scopes: ['convert'] });
      await expectProblem(t, await w.req('GET', '/v1/conversions', { key: k.key }), 403, 'scope_missing');
    });

    await t.test('a free plan gets 403 subscription_required', async (t) => {
      const k = await w.newKey({ plan: 'free' });
      await expectProblem(t, await w.req('POST', '/v1/convert/markdown/html', { key: k.key, json: body }), 403, 'subscription_required');
    });

    await t.test('a canceled subscription gets 403 subscription_required', async (t) => {
      const k = await w.newKey({ plan: 'max', subscription: 'canceled' });
      await expectProblem(t, await w.req('GET', '/v1/conversions', { key: k.key }), 403, 'subscription_required');
    });
  });
}
