// One file of the wrong type among several fails only itself: it becomes a failed file
// (input_format_mismatch, no charge) and the others convert (completed_with_errors); the
// estimate lists it with its error and prices the others. A request none of whose files is of
// the endpoint's kind — a single one, say — is still a 415 with nothing created or charged.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { oneMode, startWorld } from '../helpers/world.js';
import { buildPlain } from '../fixtures/build/docx.js';
import { buildManyPagesPdf } from '../fixtures/build/pdf.js';
import { buildGridWorkbook } from '../fixtures/build/xlsx.js';

interface Problem { error: string; status: number; detail: string }
interface File { id: string; role: string; name: string; status: string; credits: number | null; error: Problem | null; outputs?: unknown[]; content: string | null }
interface Conv { id: string; status: string; summary: Record<string, number>; files: File[]; usage: { credits_reserved: number; credits_charged: number; credits_remaining: number } }
interface Estimate { sources: Array<{ name: string; pages: number; credits: number; error?: Problem }>; credits_total: number; balance: number }

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const docs = mkdtempSync(path.join(os.tmpdir(), 'docpipe-mismatch-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));
const pdf = await buildManyPagesPdf(docs, 2, 'report.pdf');
const docx = await buildPlain(docs, 'memo.docx', ['A short memo about the roof repairs.']);
// A workbook under a Word name: its zip passes the first look, its count finds the mismatch.
const xlsx = await buildGridWorkbook(docs, 1, 4, 4);

function form(files: Array<{ file: string; name: string; type: string }>): FormData {
  const fd = new FormData();
  for (const f of files) fd.append('file', new File([readFileSync(f.file)], f.name, { type: f.type }));
  return fd;
}
const thePdf = { file: pdf, name: 'report.pdf', type: 'application/pdf' };
const theDocx = { file: docx, name: 'memo.docx', type: DOCX };
const theFakeDocx = { file: xlsx, name: 'sheet.docx', type: DOCX };

for (const mode of oneMode()) {
  t.test(`a wrong-type file among several fails only itself (${mode})`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());

    await t.test('a PDF and a Word document sent to /word: the PDF fails, the memo converts, only the memo is charged', async (t) => {
      const { key } = await w.newKey({ credits: 10 });
      const est = await w.req('POST', '/v1/convert/word/estimate', { key, body: form([thePdf, theDocx]) });
      t.equal(est.status, 200, 'the estimate answers');
      const e = await est.json() as Estimate;
      t.equal(e.sources.length, 2);
      t.match(e.sources[0], { name: 'report.pdf', pages: 0, credits: 0, error: { error: 'input_format_mismatch', status: 415, detail: /report\.pdf/ } });
      t.match(e.sources[1], { name: 'memo.docx', pages: 1, credits: 1 });
      t.notOk('error' in e.sources[1]!, 'the memo has no error');
      t.equal(e.credits_total, 1);

      const res = await w.req('POST', '/v1/convert/word', { key, body: form([thePdf, theDocx]) });
      t.equal(res.status, 200);
      const c = await res.json() as Conv;
      t.equal(c.status, 'completed_with_errors');
      t.match(c.summary, { sources: 2, completed: 1, failed: 1, queued: 0, running: 0 });
      const [bad, good] = c.files.filter((f) => f.role === 'source');
      t.match(bad, { name: 'report.pdf', status: 'failed', credits: 0, error: { error: 'input_format_mismatch', status: 415 } });
      t.strictSame(bad!.outputs, [], 'the PDF has no output');
      t.match(good, { name: 'memo.docx', status: 'completed', credits: 1 });
      const out = c.files.find((f) => f.role === 'output');
      t.match(out?.content, /roof repairs/, 'the memo is converted');
      t.equal(c.usage.credits_reserved, e.credits_total, 'submit reserved the estimate');
      t.equal(c.usage.credits_charged, 1, 'and charged the memo only');
      t.equal(c.usage.credits_remaining, 9);
    });

    await t.test('a file whose count finds the mismatch fails the same way', async (t) => {
      const res = await w.req('POST', '/v1/convert/word', { body: form([theFakeDocx, theDocx]) });
      t.equal(res.status, 200);
      const c = await res.json() as Conv;
      t.equal(c.status, 'completed_with_errors');
      const bad = c.files.find((f) => f.name === 'sheet.docx');
      t.match(bad, { status: 'failed', credits: 0, error: { error: 'input_format_mismatch' } });
    });

    await t.test('a single wrong-type file, or several with none of the kind, is a 415 that creates and charges nothing', async (t) => {
      const { key, accountId } = await w.newKey({ credits: 10 });
      for (const files of [[thePdf], [thePdf, theFakeDocx]]) {
        const names = files.map((f) => f.name).join(' + ');
        const res = await w.req('POST', '/v1/convert/word', { key, body: form(files) });
        t.equal(res.status, 415, `submit of ${names}`);
        t.equal((await res.json() as Problem).error, 'input_format_mismatch');
        const est = await w.req('POST', '/v1/convert/word/estimate', { key, body: form(files) });
        t.equal(est.status, 415, `estimate of ${names}`);
      }
      const [n] = await w.db.sql`select count(*)::int as n from conversions where account_id = ${accountId}`;
      t.equal(n!.n, 0, 'no conversion');
      const e = await (await w.req('POST', '/v1/convert/word/estimate', { key, body: form([theDocx]) })).json() as Estimate;
      t.equal(e.balance, 10, 'the balance is untouched');
    });
  });
}
