import t from 'tap';
import http from 'node:http';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { PROBLEM_FIELDS, startWorld, storeModes, type World } from '../helpers/world.js';

const MiB = 1024 * 1024;

interface UploadJ {
  id: string; object: string; status: string; name: string; bytes: number; part_size: number; part_count: number;
  etag: string | null; expires_at: string; completed_at: string | null; parts: Array<{ number: number; etag: string; bytes: number }>;
}

const md5 = (b: Buffer | string): string => createHash('md5').update(b).digest('hex');

async function put(w: World, id: string, n: number, body: string | Buffer, key = w.key): Promise<Response> {
  return w.req('PUT', `/v1/uploads/${id}/parts/${n}`, { key, body, headers: { 'content-type': 'application/octet-stream' } });
}

async function create(w: World, bytes: number, name = 'doc.bin', key = w.key): Promise<UploadJ> {
  const res = await w.req('POST', '/v1/uploads', { key, json: { bytes, name } });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
  return await res.json() as UploadJ;
}

async function problem(res: Response): Promise<Record<string, unknown>> {
  const p = await res.json() as Record<string, unknown>;
  for (const f of PROBLEM_FIELDS) if (!(f in p)) throw new Error(`problem lacks ${f}`);
  return p;
}

for (const mode of storeModes()) {
  t.test(`chunked uploads (${mode})`, async (t) => {
    const w = await startWorld(mode, { SWEEP_INTERVAL_S: '0' });
    t.teardown(() => w.close());
    const blobsDir = path.join(w.dataDir, 'blobs');

    await t.test('a small upload in parts: order, re-send, GET, idempotent complete', async (t) => {
      const u = await create(w, 11, 'notes.txt');
      t.equal(u.object, 'upload');
      t.equal(u.status, 'pending');
      t.equal(u.name, 'notes.txt');
      t.same(u.parts, []);
      t.ok(Date.parse(u.expires_at) - Date.now() > 23 * 3600 * 1000, 'expires in 24 h');
      t.equal((await put(w, u.id, 2, 'WORLD')).status, 200);
      t.equal((await put(w, u.id, 1, 'hello ')).status, 200);
      const re = await put(w, u.id, 2, 'world');
      const e2 = (await re.json() as { etag: string }).etag;
      t.equal(e2, `"${md5('world')}"`);
      const shown = await (await w.req('GET', `/v1/uploads/${u.id}`)).json() as UploadJ;
      t.same(shown.parts, [{ number: 1, etag: `"${md5('hello ')}"`, bytes: 6 }, { number: 2, etag: e2, bytes: 5 }]);
      // Etags are accepted with or without their quotes, parts in any order.
      const body = { parts: [{ number: 2, etag: e2 }, { number: 1, etag: md5('hello ') }] };
      const done = await w.req('POST', `/v1/uploads/${u.id}/complete`, { json: body });
      t.equal(done.status, 200);
      const c = await done.json() as UploadJ;
      t.equal(c.status, 'completed');
      t.ok(c.completed_at);
      const [row] = await w.db.sql`select blob from uploads where id = ${u.id}`;
      t.equal(readFileSync(path.join(blobsDir, row!.blob as string), 'utf8'), 'hello world');
      const again = await w.req('POST', `/v1/uploads/${u.id}/complete`, { json: body });
      t.equal(again.status, 200, 'a retried complete answers the completed upload');
      t.equal((await again.json() as UploadJ).etag, c.etag);
      const late = await put(w, u.id, 3, 'more');
      t.equal(late.status, 400, 'no parts after completion');
    });

    await t.test('a part missing or with a mismatched etag is 409 upload_not_completed', async (t) => {
      const u = await create(w, 10);
      await put(w, u.id, 1, 'abcde');
      await put(w, u.id, 3, 'fghij');
      const missing = await w.req('POST', `/v1/uploads/${u.id}/complete`, { json: { parts: [{ number: 1, etag: md5('abcde') }, { number: 2, etag: md5('fghij') }] } });
      t.equal(missing.status, 409);
      const p = await problem(missing);
      t.equal(p.error, 'upload_not_completed');
      t.match(p.detail, /Part 2/);
      const mismatch = await w.req('POST', `/v1/uploads/${u.id}/complete`, { json: { parts: [{ number: 1, etag: md5('zzzzz') }, { number: 3, etag: md5('fghij') }] } });
      t.equal(mismatch.status, 409);
      t.match((await problem(mismatch)).detail, /Part 1 has etag/);
      const shown = await (await w.req('GET', `/v1/uploads/${u.id}`)).json() as UploadJ;
      t.equal(shown.status, 'pending', 'a refused complete leaves the upload open to fix');
      const ok = await w.req('POST', `/v1/uploads/${u.id}/complete`, { json: { parts: [{ number: 1, etag: md5('abcde') }, { number: 3, etag: md5('fghij') }] } });
      t.equal(ok.status, 200, 'numbers need not be contiguous');
    });

    await t.test('parts that add up to more than declared are 413, fewer are 409', async (t) => {
      const over = await create(w, 8);
      await put(w, over.id, 1, 'abcde');
      await put(w, over.id, 2, 'fghij');
      const big = await w.req('POST', `/v1/uploads/${over.id}/complete`, { json: { parts: [{ number: 1, etag: md5('abcde') }, { number: 2, etag: md5('fghij') }] } });
      t.equal(big.status, 413);
      t.equal((await problem(big)).error, 'upload_too_large');
      const under = await create(w, 20);
      await put(w, under.id, 1, 'abcde');
      const small = await w.req('POST', `/v1/uploads/${under.id}/complete`, { json: { parts: [{ number: 1, etag: md5('abcde') }] } });
      t.equal(small.status, 409);
      t.match((await problem(small)).detail, /less than the 20 declared/);
    });

    await t.test('a storage failure while assembling is 503 and leaves the upload to retry', async (t) => {
      const u = await create(w, 5);
      await put(w, u.id, 1, 'abcde');
      const [part] = await w.db.sql`select blob from upload_parts where upload_id = ${u.id}`;
      rmSync(path.join(blobsDir, part!.blob as string));
      const body = { parts: [{ number: 1, etag: md5('abcde') }] };
      const res = await w.req('POST', `/v1/uploads/${u.id}/complete`, { json: body });
      t.equal(res.status, 503);
      const p = await problem(res);
      t.equal(p.error, 'conversion_unavailable');
      t.equal(p.retryable, true);
      t.equal((await (await w.req('GET', `/v1/uploads/${u.id}`)).json() as UploadJ).status, 'pending');
      await put(w, u.id, 1, 'abcde');
      t.equal((await w.req('POST', `/v1/uploads/${u.id}/complete`, { json: body })).status, 200, 'the part re-sent, it completes');
      t.same(readdirSync(path.join(w.dataDir, 'tmp')), [], 'the failed attempt left nothing in tmp');
    });

    await t.test('while one request assembles, parts and completes get 409; an abandoned claim is taken over', async (t) => {
      const u = await create(w, 5);
      await put(w, u.id, 1, 'abcde');
      await w.db.sql`update uploads set status = 'completing', locked_until = now() + interval '5 minutes' where id = ${u.id}`;
      const body = { parts: [{ number: 1, etag: md5('abcde') }] };
      const part = await put(w, u.id, 1, 'vwxyz');
      t.equal(part.status, 409);
      t.equal((await problem(part)).error, 'upload_not_completed');
      t.equal((await w.req('POST', `/v1/uploads/${u.id}/complete`, { json: body })).status, 409);
      await w.db.sql`update uploads set locked_until = now() - interval '1 second' where id = ${u.id}`;
      const done = await w.req('POST', `/v1/uploads/${u.id}/complete`, { json: body });
      t.equal(done.status, 200);
      t.equal((await done.json() as UploadJ).status, 'completed');
    });

    await t.test('a client that drops mid-part leaves no file and no part behind', async (t) => {
      const u = await create(w, 10 * MiB);
      await new Promise<void>((resolve) => {
        const req = http.request(`${w.url}/v1/uploads/${u.id}/parts/1`, {
          method: 'PUT', headers: { 'x-api-key': w.key, 'content-length': String(10 * MiB) },
        });
        req.on('error', () => resolve());
        req.write(Buffer.alloc(2 * MiB, 1), () => setTimeout(() => { req.destroy(); resolve(); }, 50));
      });
      let left: string[] = [];
      for (let i = 0; i < 40; i++) {
        await new Promise((r) => setTimeout(r, 25));
        left = readdirSync(path.join(w.dataDir, 'tmp'));
        if (left.length === 0) break;
      }
      t.same(left, [], 'DATA_DIR/tmp is empty');
      t.same((await (await w.req('GET', `/v1/uploads/${u.id}`)).json() as UploadJ).parts, [], 'no part recorded');
    });

    await t.test('a part larger than part_size is refused with 413 before it is read', async (t) => {
      const u = await create(w, 100);
      const res = await new Promise<number>((resolve, reject) => {
        const req = http.request(`${w.url}/v1/uploads/${u.id}/parts/1`, {
          method: 'PUT', headers: { 'x-api-key': w.key, 'content-length': String(u.part_size + 1) },
        }, (r) => { r.resume(); resolve(r.statusCode!); });
        req.on('error', reject);
        req.write('x');
      });
      t.equal(res, 413);
    });

    await t.test('a declared size over the plan is 413 upload_too_large; bad bodies are 400', async (t) => {
      const lite = await w.newKey({ plan: 'lite' });
      const res = await w.req('POST', '/v1/uploads', { key: lite.key, json: { bytes: 100 * MiB + 1, name: 'x.pdf' } });
      t.equal(res.status, 413);
      t.equal((await problem(res)).error, 'upload_too_large');
      t.equal((await w.req('POST', '/v1/uploads', { key: lite.key, json: { bytes: 100 * MiB, name: 'x.pdf' } })).status, 201);
      for (const body of [{ bytes: 0, name: 'a' }, { bytes: 1.5, name: 'a' }, { bytes: 10 }, { bytes: 10, name: 'a', extra: 1 }]) {
        const r = await w.req('POST', '/v1/uploads', { json: body });
        t.equal(r.status, 400, JSON.stringify(body));
      }
      const u = await create(w, 5);
      for (const n of ['0', '10001', 'x']) t.equal((await put(w, u.id, n as unknown as number, 'abc')).status, 400, `part ${n}`);
      for (const body of [{}, { parts: [] }, { parts: [{ number: 1 }] }, { parts: [{ number: 1, etag: 'a' }, { number: 1, etag: 'a' }] }]) {
        t.equal((await w.req('POST', `/v1/uploads/${u.id}/complete`, { json: body })).status, 400, JSON.stringify(body));
      }
    });

    await t.test('an expired upload is 410 file_expired for parts, complete and GET', async (t) => {
      const u = await create(w, 5);
      t.equal((await put(w, u.id, 1, 'abcde')).status, 200);
      await w.db.sql`update uploads set expires_at = now() - interval '1 second' where id = ${u.id}`;
      const part = await put(w, u.id, 1, 'abcde');
      t.equal(part.status, 410);
      t.equal((await problem(part)).error, 'file_expired');
      const done = await w.req('POST', `/v1/uploads/${u.id}/complete`, { json: { parts: [{ number: 1, etag: md5('abcde') }] } });
      t.equal(done.status, 410);
      t.equal((await w.req('GET', `/v1/uploads/${u.id}`)).status, 410);
    });

    await t.test('another account\'s upload is 404 everywhere; unknown ids too', async (t) => {
      const u = await create(w, 5);
      await put(w, u.id, 1, 'abcde');
      const other = await w.newKey();
      t.equal((await w.req('GET', `/v1/uploads/${u.id}`, { key: other.key })).status, 404);
      t.equal((await put(w, u.id, 1, 'evil!', other.key)).status, 404);
      const c = await w.req('POST', `/v1/uploads/${u.id}/complete`, { key: other.key, json: { parts: [{ number: 1, etag: md5('abcde') }] } });
      t.equal(c.status, 404);
      t.equal((await problem(c)).error, 'not_found');
      t.equal((await w.req('GET', '/v1/uploads/upl_nope')).status, 404);
      const mine = await (await w.req('GET', `/v1/uploads/${u.id}`)).json() as UploadJ;
      t.equal(mine.parts[0]!.etag, `"${md5('abcde')}"`, 'the other account changed nothing');
    });

    await t.test('uploads need the uploads scope and a subscription', async (t) => {
      const readOnly = await w.newKey({ scopes: ['read', 'convert'] });
      const r = await w.req('POST', '/v1/uploads', { key: readOnly.key, json: { bytes: 5, name: 'a' } });
      t.equal(r.status, 403);
      t.equal((await problem(r)).error, 'scope_missing');
      const lapsed = await w.newKey({ subscription: 'canceled' });
      const s = await w.req('POST', '/v1/uploads', { key: lapsed.key, json: { bytes: 5, name: 'a' } });
      t.equal((await problem(s)).error, 'subscription_required');
    });
  });
}
