// POST /v1/convert/{kind}/estimate: the price of a request without doing it. Every kind, its
// options, and what an estimate must never do: check plan limits, refuse a short balance, create
// a conversion, reserve credits, or leave a staged file behind. Both stores and both gates.
import t, { type Test } from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { startWorld, storeModes, type World } from '../helpers/world.js';
import { readLedger } from '../../src/billing/ledger.js';
import { buildPlain } from '../fixtures/build/docx.js';
import { buildManyPagesPdf } from '../fixtures/build/pdf.js';
import { buildGridWorkbook } from '../fixtures/build/xlsx.js';
import { buildDeck } from '../fixtures/build/pptx.js';

interface Estimate { sources: Array<{ name: string; pages: number; credits: number }>; credits_total: number; balance: number }

const docs = mkdtempSync(path.join(os.tmpdir(), 'docpipe-estimate-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));

function form(files: Array<{ file: string; name: string; type: string }>, fields: Record<string, string> = {}): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  for (const f of files) fd.append('file', new File([readFileSync(f.file)], f.name, { type: f.type }));
  return fd;
}

const TYPES = {
  pdf: 'application/pdf',
  png: 'image/png',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

async function estimate(t: Test, w: World, kind: string, body: { json?: unknown; body?: FormData }, key = w.key): Promise<Estimate> {
  const res = await w.req('POST', `/v1/convert/${kind}/estimate`, { key, ...body });
  t.equal(res.status, 200, `${kind} estimate answers 200`);
  return res.json() as Promise<Estimate>;
}

const pdf5 = await buildManyPagesPdf(docs, 5, 'five.pdf');
const png = path.join(docs, 'dot.png');
await sharp({ create: { width: 8, height: 8, channels: 3, background: '#fff' } }).png().toFile(png);
const docx = await buildPlain(docs, 'memo.docx', ['A short memo.']);
const xlsx = await buildGridWorkbook(docs, 1, 10, 10);
const pptx = await buildDeck(docs, 'deck.pptx');

// URL sources are fetched to be priced: the five-page PDF, served from 127.0.0.1.
const site = http.createServer((req, res) => {
  if (req.url === '/annual/report.pdf') res.writeHead(200, { 'content-type': TYPES.pdf }).end(readFileSync(pdf5));
  else res.writeHead(404).end();
});
await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
const siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
t.teardown(() => {
  site.closeAllConnections();
  site.close();
});

for (const mode of storeModes()) {
  const redis = mode === 'postgres';
  t.test(`estimates (${mode} + ${redis ? 'RedisGate' : 'LocalGate'})`, async (t) => {
    const w = await startWorld(mode, { PLAN_OVERRIDES: JSON.stringify({ lite: { fileBytes: 100 } }), ALLOW_PRIVATE_NETWORK: '1' }, { redis, credits: 50 });
    t.teardown(() => w.close());

    await t.test('every kind is priced as the pricing table says', async (t) => {
      const cases: Array<[string, { json?: unknown; body?: FormData }, Array<[string, number]>]> = [
        ['pdf', { body: form([{ file: pdf5, name: 'five.pdf', type: TYPES.pdf }]) }, [['five.pdf', 5]]],
        ['image', { body: form([{ file: png, name: 'dot.png', type: TYPES.png }]) }, [['dot.png', 2]]],
        ['word', { body: form([{ file: docx, name: 'memo.docx', type: TYPES.docx }]) }, [['memo.docx', 1]]],
        ['excel', { body: form([{ file: xlsx, name: 'grid.xlsx', type: TYPES.xlsx }]) }, [['grid.xlsx', 1]]],
        ['html', { json: { html: '<p>hello</p>' } }, [['input-1.html', 1]]],
        ['url', { json: { url: `${siteUrl}/annual/report.pdf` } }, [['report.pdf', 1 + 5]]],
        ['text', { json: { texts: ['small', 'b'.repeat(600 * 1024)] } }, [['input-1.txt', 1], ['input-2.txt', 2]]],
        ['markdown/html', { json: { markdown: '# one\n\n'.repeat(1000) } }, [['input-1.md', 0]]],
        ['markdown/text', { json: { text: 'plain' } }, [['input-1.md', 0]]],
      ];
      for (const [kind, body, want] of cases) {
        const e = await estimate(t, w, kind, body);
        t.strictSame(e.sources.map((s) => [s.name, s.credits]), want, `${kind}: names and credits`);
        t.equal(e.credits_total, want.reduce((a, [, c]) => a + c, 0), `${kind}: total`);
        t.ok(e.sources.every((s) => Number.isInteger(s.pages) && s.pages >= 1), `${kind}: pages`);
        t.equal(e.balance, 50, `${kind}: balance`);
      }
      const deck = await estimate(t, w, 'powerpoint', { body: form([{ file: pptx, name: 'deck.pptx', type: TYPES.pptx }]) });
      t.equal(deck.sources[0]!.credits, Math.ceil(deck.sources[0]!.pages / 10), 'powerpoint: 1 per started 10 slides');
      t.equal((await estimate(t, w, 'pdf', { body: form([{ file: pdf5, name: 'five.pdf', type: TYPES.pdf }]) })).sources[0]!.pages, 5);
    });

    await t.test('options change the estimate as they change the conversion', async (t) => {
      const pdf = (fields: Record<string, string>) => estimate(t, w, 'pdf', { body: form([{ file: pdf5, name: 'five.pdf', type: TYPES.pdf }], fields) });
      t.equal((await pdf({ pages: '1-2' })).credits_total, 2, 'two pages');
      t.equal((await pdf({ pages: '1-2', ocr: 'true' })).credits_total, 6, 'OCR: 3 per page');
      t.equal((await pdf({ quality: 'max' })).credits_total, 15, 'quality max: ×3');
      const img = await estimate(t, w, 'image', { body: form([{ file: png, name: 'dot.png', type: TYPES.png }], { image_mode: 'understand' }) });
      t.equal(img.credits_total, 2, 'image understood with no vision model configured: what runs, OCR (2)');
    });

    await t.test('sources are listed in request order', async (t) => {
      const e = await estimate(t, w, 'text', { json: { texts: ['z'.repeat(600 * 1024), 'a', 'm'.repeat(1100 * 1024)] } });
      t.strictSame(e.sources.map((s) => [s.name, s.credits]), [['input-1.txt', 2], ['input-2.txt', 1], ['input-3.txt', 3]]);
      t.equal(e.credits_total, 6);
    });

    await t.test('an estimate never changes the balance, creates nothing, reserves nothing and leaves no file', async (t) => {
      const before = await readLedger(w.db.sql, w.accountId);
      for (let i = 0; i < 5; i++) await estimate(t, w, 'text', { json: { text: `estimate ${i}` } });
      await estimate(t, w, 'word', { body: form([{ file: docx, name: 'memo.docx', type: TYPES.docx }]) });
      await estimate(t, w, 'url', { json: { url: `${siteUrl}/annual/report.pdf` } });
      t.strictSame(await readLedger(w.db.sql, w.accountId), before, 'the ledger is untouched');
      t.equal(before.balance, 50);
      const [l] = await w.db.sql`select count(*)::int as n from ledger where account_id = ${w.accountId} and kind <> 'grant'`;
      t.equal(l!.n, 0, 'no reservation row');
      const [c] = await w.db.sql`select count(*)::int as n from conversions`;
      t.equal(c!.n, 0, 'no conversion');
      t.equal(await w.app.deps.gate.running(w.accountId), 0, 'no slot taken');
      const tmp = path.join(w.dataDir, 'tmp');
      let left = readdirSync(tmp);
      for (let i = 0; i < 100 && left.length > 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
        left = readdirSync(tmp);
      }
      t.strictSame(left, [], 'DATA_DIR/tmp is empty');
      t.strictSame(readdirSync(path.join(w.dataDir, 'blobs')), [], 'no blob kept');
    });

    await t.test('an estimate does not check plan limits that submit enforces', async (t) => {
      const a = await w.newKey({ plan: 'lite' });
      const big = { text: 'q'.repeat(200) };
      const e = await estimate(t, w, 'text', { json: big }, a.key);
      t.equal(e.credits_total, 1);
      const res = await w.req('POST', '/v1/convert/text', { key: a.key, json: big });
      t.equal(res.status, 413, 'submit refuses what the estimate priced');
      t.equal((await res.json() as { error: string }).error, 'file_too_large');
    });

    await t.test('an estimate above the balance still answers 200', async (t) => {
      const a = await w.newKey({ credits: 1 });
      const e = await estimate(t, w, 'text', { json: { text: 'w'.repeat(600 * 1024) } }, a.key);
      t.strictSame({ total: e.credits_total, balance: e.balance }, { total: 2, balance: 1 });
      const res = await w.req('POST', '/v1/convert/text', { key: a.key, json: { text: 'w'.repeat(600 * 1024) } });
      t.equal(res.status, 402, 'while submit is refused');
    });

    await t.test('estimates need the read scope and an active subscription', async (t) => {
      const reader = await w.newKey({ scopes: ['read'] });
      await estimate(t, w, 'text', { json: { text: 'x' } }, reader.key);
      const writer = await w.newKey({ scopes: ['convert'] });
      const r1 = await w.req('POST', '/v1/convert/text/estimate', { key: writer.key, json: { text: 'x' } });
      t.equal(r1.status, 403);
      t.equal((await r1.json() as { error: string }).error, 'scope_missing');
      const free = await w.newKey({ plan: 'free' });
      const r2 = await w.req('POST', '/v1/convert/text/estimate', { key: free.key, json: { text: 'x' } });
      t.equal(r2.status, 403);
      t.equal((await r2.json() as { error: string }).error, 'subscription_required');
    });
  });
}
