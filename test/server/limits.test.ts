// Plan limits at submit (DESIGN.md §2, §8): each limit answers its own code and status. Small
// limits come from PLAN_OVERRIDES (pro: sizes and allowances, max: the request rate); lite keeps
// its real concurrency of 2. Postgres + RedisGate and embedded + LocalGate.
import t, { type Test } from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import { HeldExecutor, PROBLEM_FIELDS, startWorld, storeModes, type World } from '../helpers/world.js';
import { buildPlain } from '../fixtures/build/docx.js';

const OVERRIDES = {
  pro: { fileBytes: 20_000, pageCap: 3, filesPerMonth: 5, storageBytes: 3_000 },
  max: { requestsPerMinute: 3 },
};

const docs = mkdtempSync(path.join(os.tmpdir(), 'docpipe-limits-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));

async function expectProblem(t: Test, res: Response, status: number, code: string): Promise<Record<string, unknown>> {
  t.equal(res.status, status, `${code} is ${status}`);
  t.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  const p = await res.json() as Record<string, unknown>;
  t.equal(p.error, code);
  t.ok(PROBLEM_FIELDS.every((f) => f in p), 'every Problem field');
  return p;
}

async function until(cond: () => Promise<boolean>, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return true;
    await new Promise((res) => setTimeout(res, 25));
  }
  return false;
}

function docxForm(file: string, name: string): FormData {
  const fd = new FormData();
  fd.append('file', new File([readFileSync(file)], name, { type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' }));
  return fd;
}

/** A .docx that counts as 1 page but fails to convert (its XML is cut short). */
async function brokenDocx(): Promise<string> {
  const files = unzipSync(readFileSync(await buildPlain(docs, 'src.docx', ['Broken text here', 'More'])));
  const xml = strFromU8(files['word/document.xml']!);
  files['word/document.xml'] = strToU8(xml.slice(0, xml.indexOf('More') + 4));
  const bad = path.join(docs, 'broken.docx');
  writeFileSync(bad, zipSync(files));
  return bad;
}

for (const mode of storeModes()) {
  const redis = mode === 'postgres';
  t.test(`plan limits (${mode} + ${redis ? 'RedisGate' : 'LocalGate'})`, async (t) => {
    const held = new HeldExecutor();
    const w: World = await startWorld(mode, { PLAN_OVERRIDES: JSON.stringify(OVERRIDES) }, { redis, executor: held });
    t.teardown(() => w.close());
    const gate = w.app.deps.gate;
    const text = (key: string, json: unknown, headers: Record<string, string> = {}) =>
      w.req('POST', '/v1/convert/text', { key, json, headers });

    await t.test('a file over the plan size is 413 file_too_large; one at the size is taken', async (t) => {
      const a = await w.newKey({ plan: 'pro' });
      const p = await expectProblem(t, await text(a.key, { text: 'x'.repeat(20_001) }), 413, 'file_too_large');
      t.match(p.detail, /20001 bytes; the plan allows 20000/);
      t.equal((await text(a.key, { text: 'x'.repeat(20_000) })).status, 200);
    });

    await t.test('a file over the page cap is 422 page_cap_exceeded; one at the cap is taken', async (t) => {
      const a = await w.newKey({ plan: 'pro' });
      const para = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(10); // 570 characters
      const three = await buildPlain(docs, 'three.docx', Array(15).fill(para)); // 8,550 characters: 3 pages
      const four = await buildPlain(docs, 'four.docx', Array(16).fill(para)); // 9,120 characters: 4 pages
      const p = await expectProblem(t, await w.req('POST', '/v1/convert/word', { key: a.key, body: docxForm(four, 'four.docx') }), 422, 'page_cap_exceeded');
      t.match(p.detail, /4 pages; the plan allows 3/);
      t.equal((await w.req('POST', '/v1/convert/word', { key: a.key, body: docxForm(three, 'three.docx') })).status, 200);
    });

    await t.test('files past the monthly allowance are 403 upload_limit_exceeded', async (t) => {
      const a = await w.newKey({ plan: 'pro' });
      t.equal((await text(a.key, { texts: ['a', 'b', 'c'] })).status, 200);
      await expectProblem(t, await text(a.key, { texts: ['d', 'e', 'f'] }), 403, 'upload_limit_exceeded');
      t.equal((await text(a.key, { texts: ['d', 'e'] })).status, 200, 'exactly up to the allowance');
      await expectProblem(t, await text(a.key, { text: 'f' }), 403, 'upload_limit_exceeded');
      const [c] = await w.db.sql`select count(*)::int as n from files where account_id = ${a.accountId} and role = 'source'`;
      t.equal(c!.n, 5);
      t.equal(await gate.running(a.accountId), 0, 'a refused submit reserves nothing');

      const [conv] = await w.db.sql`select id from conversions where account_id = ${a.accountId} limit 1`;
      t.equal((await w.req('DELETE', `/v1/conversions/${conv!.id}`, { key: a.key })).status, 200);
      await expectProblem(t, await text(a.key, { text: 'g' }), 403, 'upload_limit_exceeded');
      t.pass('deleting a conversion does not give the allowance back');
    });

    await t.test('a concurrent burst cannot pass the monthly allowance', async (t) => {
      const a = await w.newKey({ plan: 'pro', credits: 100 });
      const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => text(a.key, { text: `m${i}` })));
      const codes = await Promise.all(burst.map(async (r) => (r.status === 200 ? 200 : (await r.json() as { error: string }).error)));
      t.strictSame(codes.sort(), [200, 200, 200, 200, 200, ...Array(3).fill('upload_limit_exceeded')], 'exactly 5 admitted');
      t.ok(await until(async () => (await gate.running(a.accountId)) === 0), 'the refused ones gave their reservations back');
      t.equal(await gate.balance(a.accountId), 95, 'and only the admitted ones were charged');
    });

    await t.test('storing past the library size is 403 storage_limit_exceeded; not storing is fine', async (t) => {
      const a = await w.newKey({ plan: 'pro' });
      t.equal((await text(a.key, { text: 'y'.repeat(1_500), store: true })).status, 200, 'source + output fill the 3,000 bytes');
      await expectProblem(t, await text(a.key, { text: 'z', store: true }), 403, 'storage_limit_exceeded');
      t.equal((await text(a.key, { text: 'z' })).status, 200, 'without store the library is not counted');
    });

    await t.test('requests past the per-minute rate are 429 rate_limited with Retry-After', async (t) => {
      const a = await w.newKey({ plan: 'max' });
      for (let i = 0; i < 3; i++) t.equal((await w.req('POST', '/v1/convert/markdown/text', { key: a.key, json: { markdown: `r${i}` } })).status, 200);
      const res = await w.req('POST', '/v1/convert/markdown/text', { key: a.key, json: { markdown: 'one too many' } });
      const p = await expectProblem(t, res, 429, 'rate_limited');
      t.equal(p.retryable, true);
      const after = Number(res.headers.get('retry-after'));
      t.ok(Number.isInteger(after) && after >= 1 && after <= 60, `Retry-After ${after}`);
      await expectProblem(t, await w.req('POST', '/v1/convert/text/estimate', { key: a.key, json: { text: 'x' } }), 429, 'rate_limited');
      const other = await w.newKey({ plan: 'max' });
      t.equal((await w.req('POST', '/v1/convert/markdown/text', { key: other.key, json: { markdown: 'x' } })).status, 200, 'per account');
    });

    await t.test('a lite account runs 2 conversions at once: a burst gets 2 in and 429 concurrency_limited for the rest', async (t) => {
      const a = await w.newKey({ plan: 'lite' });
      held.hold();
      t.teardown(() => held.release());
      const burst = await Promise.all(Array.from({ length: 6 }, (_, i) => text(a.key, { text: `burst ${i}` }, { prefer: 'respond-async' })));
      t.strictSame(burst.map((r) => r.status).sort(), [202, 202, 429, 429, 429, 429]);
      const refused = burst.filter((r) => r.status === 429);
      t.ok(refused.every((r) => r.headers.get('retry-after') === '1'));
      const p = await refused[0]!.json() as Record<string, unknown>;
      t.equal(p.error, 'concurrency_limited');
      t.equal(p.retryable, true);
      t.equal(await gate.running(a.accountId), 2);

      const render = await w.req('POST', '/v1/convert/markdown/html', { key: a.key, json: { markdown: '# free' }, headers: { prefer: 'respond-async' } });
      t.equal(render.status, 202, 'Markdown rendering takes no slot: admitted at the limit');

      held.release();
      t.ok(await until(async () => (await gate.running(a.accountId)) === 0), 'slots free when the work ends');
      held.hold();
      const next = await Promise.all(Array.from({ length: 3 }, (_, i) => text(a.key, { text: `next ${i}` }, { prefer: 'respond-async' })));
      t.strictSame(next.map((r) => r.status).sort(), [202, 202, 429]);
      held.release();
      t.ok(await until(async () => (await gate.running(a.accountId)) === 0));
    });

    await t.test('slots also free when the work fails', async (t) => {
      const a = await w.newKey({ plan: 'lite' });
      const bad = await brokenDocx();
      held.hold();
      t.teardown(() => held.release());
      const send = () => w.req('POST', '/v1/convert/word', { key: a.key, body: docxForm(bad, 'broken.docx'), headers: { prefer: 'respond-async' } });
      t.equal((await send()).status, 202);
      t.equal((await send()).status, 202);
      await expectProblem(t, await send(), 429, 'concurrency_limited');
      held.release();
      t.ok(await until(async () => (await gate.running(a.accountId)) === 0), 'both failed and gave their slots back');
      const [f] = await w.db.sql`select count(*)::int as n from conversions where account_id = ${a.accountId} and status = 'failed'`;
      t.equal(f!.n, 2);
      t.equal((await send()).status, 202, 'a new one is admitted');
      t.ok(await until(async () => (await gate.running(a.accountId)) === 0));
    });

    await t.test('a balance below the price is 402 insufficient_credits', async (t) => {
      const a = await w.newKey({ plan: 'lite', credits: 0 });
      await expectProblem(t, await text(a.key, { text: 'x' }), 402, 'insufficient_credits');
    });
  });
}
