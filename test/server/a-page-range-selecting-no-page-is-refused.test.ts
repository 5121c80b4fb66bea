// A `pages` range that selects no page of the document (`5-9` on a one-page PDF) is refused with
// 400 invalid_request naming the document's page count, at submit and at estimate: no
// conversion is created and the balance does not move. A range that selects some page still
// converts, and converts only the pages it selects. Both stores.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { oneMode, startWorld } from '../helpers/world.js';
import { readLedger } from '../../src/billing/ledger.js';
import { buildManyPagesPdf } from '../fixtures/build/pdf.js';

const docs = mkdtempSync(path.join(os.tmpdir(), 'docpipe-empty-range-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));
const onePage = readFileSync(await buildManyPagesPdf(docs, 1, 'one.pdf'));
const threePages = readFileSync(await buildManyPagesPdf(docs, 3, 'three.pdf'));

const form = (pages: string): FormData => {
  const fd = new FormData();
  fd.append('file', new Blob([onePage], { type: 'application/pdf' }), 'one.pdf');
  fd.append('pages', pages);
  return fd;
};

for (const mode of oneMode()) {
  t.test(`a page range selecting no page (${mode})`, async (t) => {
    const w = await startWorld(mode, {}, { pool: true });
    t.teardown(() => w.close());
    const a = await w.newKey({ credits: 10 });
    const count = async (): Promise<number> =>
      (await w.db.sql<Array<{ n: number }>>`select count(*)::int as n from conversions where account_id = ${a.accountId}`)[0]!.n;

    for (const endpoint of ['/v1/convert/pdf', '/v1/convert/pdf/estimate']) {
      const res = await w.req('POST', endpoint, { key: a.key, body: form('5-9') });
      t.equal(res.status, 400, `${endpoint}: 400`);
      const p = await res.json() as { error: string; detail: string };
      t.equal(p.error, 'invalid_request', `${endpoint}: invalid_request`);
      t.match(p.detail, /selects no page/, `${endpoint}: says the range selects nothing`);
      t.match(p.detail, /has 1 page\b/, `${endpoint}: names the page count`);
    }
    t.equal(await count(), 0, 'no conversion was created');
    t.equal((await readLedger(w.db.sql, a.accountId)).balance, 10, 'the balance is unchanged');
    const e = await w.req('POST', '/v1/convert/pdf/estimate', { key: a.key, body: form('1') });
    t.equal((await e.json() as { balance: number }).balance, 10, 'the API shows the same balance');

    const ok = await w.req('POST', '/v1/convert/pdf', { key: a.key, body: form('1-9') });
    t.equal(ok.status, 200, 'a range that selects the one page converts');
    const c = await ok.json() as { files: Array<{ role: string; format: string | null; content: string | null }> };
    t.match(c.files.find((f) => f.role === 'output' && f.format === 'markdown')?.content, 'Page 1 body text');
    t.equal((await readLedger(w.db.sql, a.accountId)).balance, 9, 'and is charged its one page');

    // The job started right after the commit converts from what admission stored, options and
    // all (it does not read the conversion back): page 2 of 3, and one page charged.
    const three = new FormData();
    three.append('file', new Blob([threePages], { type: 'application/pdf' }), 'three.pdf');
    three.append('pages', '2');
    const two = await w.req('POST', '/v1/convert/pdf', { key: a.key, body: three });
    t.equal(two.status, 200, 'page 2 of three converts');
    const c2 = await two.json() as { usage: { credits_charged: number }; files: Array<{ role: string; format: string | null; content: string | null }> };
    const md = c2.files.find((f) => f.role === 'output' && f.format === 'markdown')?.content ?? '';
    t.match(md, 'Page 2 body text', 'the page asked for');
    t.notMatch(md, /Page [13] body text/, 'and no other');
    t.equal(c2.usage.credits_charged, 1, 'one page charged');
    t.equal((await readLedger(w.db.sql, a.accountId)).balance, 8);
  });
}
