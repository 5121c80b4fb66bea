// URL conversions priced as what they fetch (DESIGN.md §3: 1 for the fetch + the price of what
// was fetched, as its kind), through the API: the estimate fetches and prices exactly, submit
// reserves and charges exactly that, the job converts the document fetched at admission without
// fetching it again, and a URL that cannot be fetched costs nothing. Real documents come from a
// node:http server on 127.0.0.1 (ALLOW_PRIVATE_NETWORK=1, as the URL tests of webhooks do), which
// counts the requests it gets. Postgres + RedisGate and embedded PGlite + LocalGate alike.
import t, { type Test } from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import iconv from 'iconv-lite';
import { startWorld, storeModes, type World } from '../helpers/world.js';
import { readLedger } from '../../src/billing/ledger.js';
import { buildManyPagesPdf } from '../fixtures/build/pdf.js';
import { pourForever } from '../helpers/endless.js';

interface Estimate { sources: Array<{ name: string; pages: number; credits: number }>; credits_total: number; balance: number }
interface FileJ {
  id: string; role: string; name: string; mime: string; status: string; bytes: number | null; pages: number | null;
  credits: number | null; content: string | null; error: { error: string; detail: string } | null;
}
interface ConvJ {
  id: string;
  status: string;
  usage: { credits_reserved: number; credits_charged: number; credits_remaining: number | null };
  files: FileJ[];
}
interface Problem { error: string; detail: string; status: number }

const docs = mkdtempSync(path.join(os.tmpdir(), 'docpipe-url-credits-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));

const PDF = readFileSync(await buildManyPagesPdf(docs, 3, 'three.pdf'));
/** Real HTML of about 1.2 MB: 1 + 3 credits (HTML is priced per started 500 KB = 512,000 bytes). */
const BIG_HTML = bigHtml(1.2 * 1024 * 1024);
const GUIDE = '<html><head><title>Guide</title></head><body><h1>Guide</h1>'
  + '<p>Read <a href="next.html">the next page</a> and see <img src="../img/diagram.png" alt="diagram">.</p></body></html>';

function bigHtml(atLeast: number): Buffer {
  const parts = ['<!doctype html><html><head><title>Big</title></head><body><h1>A long page</h1>'];
  let size = parts[0]!.length;
  for (let n = 1; size < atLeast; n++) {
    const p = `<p>Paragraph ${n} of the long page, with enough words in it to read like prose.</p>\n`;
    parts.push(p);
    size += p.length;
  }
  parts.push('</body></html>');
  return Buffer.from(parts.join(''), 'utf8');
}

const hits = new Map<string, number>();
const server = http.createServer((req, res) => {
  const p = new URL(req.url ?? '/', 'http://x').pathname;
  hits.set(p, (hits.get(p) ?? 0) + 1);
  switch (p) {
    case '/docs/three.pdf':
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': PDF.length }).end(PDF);
      return;
    case '/big.html':
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(BIG_HTML);
      return;
    case '/old/start':
      res.writeHead(302, { location: '/docs/guide/page.html' }).end();
      return;
    case '/docs/guide/page.html':
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(GUIDE);
      return;
    case '/latin.html':
      res.writeHead(200, { 'content-type': 'text/html; charset=windows-1252' });
      res.end(iconv.encode('<html><head><meta charset="utf-8"></head><body><p>Déjà vu – 5 €</p></body></html>', 'windows-1252'));
      return;
    case '/endless':
      // No Content-Length and no end: only the 20 MB cap stops the download.
      pourForever(res);
      return;
    default:
      res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not found</h1>');
  }
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
t.teardown(() => {
  server.closeAllConnections();
  server.close();
});
const hitsOf = (p: string): number => hits.get(p) ?? 0;

/** Sum and number of the account's ledger rows, by kind. */
async function ledgerKinds(w: World, accountId: string): Promise<Record<string, { sum: number; rows: number }>> {
  const rows = await w.db.sql`select kind, sum(amount)::int as sum, count(*)::int as rows from ledger
                              where account_id = ${accountId} group by kind`;
  return Object.fromEntries(rows.map((r) => [r.kind as string, { sum: r.sum as number, rows: r.rows as number }]));
}

async function estimate(t: Test, w: World, key: string, json: unknown): Promise<Estimate> {
  const res = await w.req('POST', '/v1/convert/url/estimate', { key, json });
  t.equal(res.status, 200, 'the estimate answers 200');
  return res.json() as Promise<Estimate>;
}

async function convert(t: Test, w: World, key: string, json: unknown, headers: Record<string, string> = {}): Promise<ConvJ> {
  const res = await w.req('POST', '/v1/convert/url?wait=30', { key, json, headers });
  t.equal(res.status, 200, 'the conversion finishes in the request');
  return res.json() as Promise<ConvJ>;
}

/** DATA_DIR/tmp once the request's clean-ups have run (they run as the answer is sent). */
async function tmpLeft(w: World): Promise<string[]> {
  const tmp = path.join(w.dataDir, 'tmp');
  let left = readdirSync(tmp);
  for (let i = 0; i < 100 && left.length > 0; i++) {
    await new Promise((r) => setTimeout(r, 20));
    left = readdirSync(tmp);
  }
  return left;
}

const sourceOf = (c: ConvJ): FileJ => c.files.find((f) => f.role === 'source')!;
const markdownOf = (c: ConvJ): string => c.files.find((f) => f.role === 'output')?.content ?? '';

for (const mode of storeModes()) {
  const redis = mode === 'postgres';
  t.test(`URL pricing (${mode} + ${redis ? 'RedisGate' : 'LocalGate'})`, async (t) => {
    const w = await startWorld(mode, { ALLOW_PRIVATE_NETWORK: '1' }, { redis });
    t.teardown(() => w.close());
    const gate = w.app.deps.gate;

    await t.test('an estimate fetches the URL and prices what it fetched, as its kind', async (t) => {
      const a = await w.newKey({ credits: 50 });
      const before = hitsOf('/docs/three.pdf');
      const pdf = await estimate(t, w, a.key, { url: `${base}/docs/three.pdf` });
      t.strictSame(pdf, { sources: [{ name: 'three.pdf', pages: 3, credits: 1 + 3 }], credits_total: 4, balance: 50 },
        'a 3-page PDF: 1 for the fetch + 3 pages');
      t.equal(hitsOf('/docs/three.pdf'), before + 1, 'fetched once');
      t.ok(BIG_HTML.length > 2 * 512_000 && BIG_HTML.length <= 3 * 512_000, `the page is ${BIG_HTML.length} bytes`);
      const html = await estimate(t, w, a.key, { url: `${base}/big.html` });
      t.strictSame(html.sources, [{ name: 'big.html', pages: 1, credits: 1 + 3 }], 'a 1.2 MB page: 1 for the fetch + 3 started 500 KB');
      const both = await estimate(t, w, a.key, { urls: [`${base}/big.html`, `${base}/docs/three.pdf`] });
      t.strictSame(both.sources.map((s) => [s.name, s.pages, s.credits]), [['big.html', 1, 4], ['three.pdf', 3, 4]], 'in request order');
      t.equal(both.credits_total, 8);
      t.strictSame(await ledgerKinds(w, a.accountId), { grant: { sum: 50, rows: 1 } }, 'nothing reserved');
      const [c] = await w.db.sql`select count(*)::int as n from conversions where account_id = ${a.accountId}`;
      t.equal(c!.n, 0, 'no conversion');
      t.strictSame(await tmpLeft(w), [], 'what the estimates fetched is deleted');
    });

    await t.test('an estimate of a URL that cannot be fetched answers the Problem, and leaves no file', async (t) => {
      const res = await w.req('POST', '/v1/convert/url/estimate', { json: { url: `${base}/gone.pdf` } });
      t.equal(res.status, 422);
      t.match(res.headers.get('content-type'), /^application\/problem\+json/);
      const p = await res.json() as Problem;
      t.equal(p.error, 'invalid_document');
      t.match(p.detail, new RegExp(`${base}/gone\\.pdf answered HTTP 404`));
      t.strictSame(await tmpLeft(w), [], 'nothing is left');
    });

    await t.test('beside others, a URL that cannot be fetched is listed with its error and the others are priced', async (t) => {
      const res = await w.req('POST', '/v1/convert/url/estimate', { json: { urls: [`${base}/docs/three.pdf`, `${base}/gone.pdf`] } });
      t.equal(res.status, 200);
      const e = await res.json() as Estimate & { sources: Array<{ error?: Problem }> };
      t.match(e.sources[0], { name: 'three.pdf', pages: 3, credits: 4 });
      t.notOk('error' in e.sources[0]!);
      t.match(e.sources[1], { name: 'gone.pdf', pages: 0, credits: 0, error: { error: 'invalid_document', detail: new RegExp(`${base}/gone\\.pdf answered HTTP 404`) } });
      t.equal(e.credits_total, 4, 'what submit would reserve');
      t.strictSame(await tmpLeft(w), [], 'the document fetched is deleted too');
    });

    await t.test('submit reserves and charges exactly the estimate, and fetches the document once', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const before = hitsOf('/docs/three.pdf');
      const c = await convert(t, w, a.key, { url: `${base}/docs/three.pdf` });
      t.equal(c.status, 'completed');
      t.equal(hitsOf('/docs/three.pdf'), before + 1, 'one request: the job converted what admission fetched');
      t.strictSame(c.usage, { credits_reserved: 4, credits_charged: 4, credits_remaining: 6 });
      const src = sourceOf(c);
      t.match(src, { name: 'three.pdf', mime: 'application/pdf', status: 'completed', bytes: PDF.length, pages: 3, credits: 4 },
        'the source is the fetched document');
      t.match(markdownOf(c), /Page 1 body text[\s\S]*Page 3 body text about item number 3/, 'converted as a PDF');
      const blob = await w.req('GET', `/v1/conversions/${c.id}/files/${src.id}/content`, { key: a.key });
      t.same(Buffer.from(await blob.arrayBuffer()), PDF, 'its content is the fetched PDF');
      t.strictSame(await ledgerKinds(w, a.accountId), {
        grant: { sum: 10, rows: 1 }, reserve: { sum: -4, rows: 1 }, release: { sum: 4, rows: 1 }, charge: { sum: -4, rows: 1 },
      });
      t.strictSame(await readLedger(w.db.sql, a.accountId), { balance: 6, reservations: [] });
      t.equal(await gate.balance(a.accountId), 6);
      t.equal(await gate.running(a.accountId), 0);
      t.strictSame(await tmpLeft(w), [], 'nothing staged is left');
    });

    await t.test('a 1.2 MB page is reserved and charged 1 + 3', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const c = await convert(t, w, a.key, { url: `${base}/big.html` });
      t.equal(c.status, 'completed');
      t.strictSame(c.usage, { credits_reserved: 4, credits_charged: 4, credits_remaining: 6 });
      // Stored as the job converts it: UTF-8 with a BOM, so that the header's charset wins.
      t.match(sourceOf(c), { name: 'big.html', mime: 'text/html', bytes: BIG_HTML.length + 3, pages: 1, credits: 4 });
      const out = c.files.find((f) => f.role === 'output')!;
      const md = await (await w.req('GET', `/v1/conversions/${c.id}/files/${out.id}/content`, { key: a.key })).text();
      t.match(md, /^# A long page\n\nParagraph 1 of the long page[\s\S]*Paragraph 2 of the long page/);
      t.equal((await readLedger(w.db.sql, a.accountId)).balance, 6);
    });

    await t.test('a URL answering 404 costs nothing: its file fails, nothing is reserved or charged', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const c = await convert(t, w, a.key, { url: `${base}/missing.pdf` });
      t.equal(c.status, 'failed');
      const src = sourceOf(c);
      t.match(src, { name: 'missing.pdf', status: 'failed', credits: 0, error: { error: 'invalid_document', detail: /answered HTTP 404/ } });
      t.strictSame(c.usage, { credits_reserved: 0, credits_charged: 0, credits_remaining: 10 });
      t.notOk((await ledgerKinds(w, a.accountId)).charge, 'no charge row');
      t.strictSame(await readLedger(w.db.sql, a.accountId), { balance: 10, reservations: [] }, 'settled at once');
      t.equal(await gate.balance(a.accountId), 10);
      t.equal(await gate.running(a.accountId), 0, 'its slot is free');
      t.strictSame(await tmpLeft(w), []);
    });

    await t.test('a URL past the 20 MB cap costs nothing, and its partial download is removed', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const c = await convert(t, w, a.key, { url: `${base}/endless` });
      t.equal(c.status, 'failed');
      t.match(sourceOf(c), { status: 'failed', credits: 0, error: { error: 'invalid_document', detail: /larger than the 20 MB limit/ } });
      t.strictSame(c.usage, { credits_reserved: 0, credits_charged: 0, credits_remaining: 10 });
      t.strictSame(await tmpLeft(w), [], 'no partial download left in DATA_DIR/tmp');
      const est = await w.req('POST', '/v1/convert/url/estimate', { key: a.key, json: { url: `${base}/endless` } });
      t.equal(est.status, 422);
      t.match(await est.json(), { error: 'invalid_document', detail: /larger than the 20 MB limit/ });
      t.strictSame(await tmpLeft(w), [], 'nor after the estimate');
    });

    await t.test('one URL fetched and one not: the good one is reserved and charged, the other nothing', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const c = await convert(t, w, a.key, { urls: [`${base}/docs/three.pdf`, `${base}/nothing-here`] });
      t.equal(c.status, 'completed_with_errors');
      t.strictSame(c.files.filter((f) => f.role === 'source').map((f) => [f.name, f.status, f.credits]),
        [['three.pdf', 'completed', 4], ['nothing-here', 'failed', 0]]);
      t.strictSame(c.usage, { credits_reserved: 4, credits_charged: 4, credits_remaining: 6 });
    });

    await t.test('after a redirect, relative links resolve against the final address', async (t) => {
      const before = { start: hitsOf('/old/start'), page: hitsOf('/docs/guide/page.html') };
      const c = await convert(t, w, w.key, { url: `${base}/old/start` });
      t.equal(c.status, 'completed');
      const md = markdownOf(c);
      t.match(md, `[the next page](${base}/docs/guide/next.html)`);
      t.match(md, `![diagram](${base}/docs/img/diagram.png)`);
      t.strictSame({ start: hitsOf('/old/start'), page: hitsOf('/docs/guide/page.html') },
        { start: before.start + 1, page: before.page + 1 }, 'each address was requested once');
      t.match(sourceOf(c), { name: 'start', mime: 'text/html', credits: 2 });
    });

    await t.test('the charset the server declares still decides how a page is read', async (t) => {
      const c = await convert(t, w, w.key, { url: `${base}/latin.html` });
      t.match(markdownOf(c), 'Déjà vu – 5 €');
    });

    await t.test('an Idempotency-Key retry replays the conversion without fetching again', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const before = hitsOf('/docs/three.pdf');
      const headers = { 'idempotency-key': `url-${mode}` };
      const first = await convert(t, w, a.key, { url: `${base}/docs/three.pdf` }, headers);
      const again = await w.req('POST', '/v1/convert/url?wait=30', { key: a.key, json: { url: `${base}/docs/three.pdf` }, headers });
      t.equal(again.status, 200);
      t.equal(again.headers.get('idempotent-replayed'), 'true');
      t.equal((await again.json() as ConvJ).id, first.id);
      t.equal(hitsOf('/docs/three.pdf'), before + 1, 'fetched for the first request only');
      t.equal((await readLedger(w.db.sql, a.accountId)).balance, 6, 'charged once');
    });
  });
}
