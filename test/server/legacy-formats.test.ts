// Legacy formats through the API: where LibreOffice is missing (SOFFICE_PATH pointing nowhere)
// .doc/.xls/.ppt answer 503 parser_unavailable, not retryable, with the package to install, at
// estimate and at submit, and nothing is reserved, while OOXML still converts; an .xls renamed
// .xlsx converts at the Excel endpoint and is charged no more than its estimate; a PDF sent to
// the Word endpoint is a 415 whose hint names /v1/convert/pdf. One store: the stores play no
// part here, and LibreOffice runs once.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROBLEM_FIELDS, startWorld } from '../helpers/world.js';
import { LEGACY_DIR, WORKBOOK } from '../fixtures/build/legacy.js';
import { buildPlain } from '../fixtures/build/docx.js';
import { buildReportPdf } from '../fixtures/build/pdf.js';

const docs = mkdtempSync(path.join(os.tmpdir(), 'docpipe-legacy-api-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));

function form(files: Array<[file: string, name: string]>): FormData {
  const fd = new FormData();
  for (const [file, name] of files) fd.append('file', new File([readFileSync(file)], name, { type: 'application/octet-stream' }));
  return fd;
}

const legacy = (name: string): string => path.join(LEGACY_DIR, name);

interface Problem { error: string; status: number; retryable: boolean; hint: string; detail: string }

t.test('legacy formats through the API', async (t) => {
  const w = await startWorld('embedded');
  t.teardown(() => w.close());
  const balance = async (): Promise<number> => ((await (await w.req('POST', '/v1/convert/text/estimate', { json: { text: 'x' } })).json()) as { balance: number }).balance;

  await t.test('without LibreOffice, legacy files are 503 at estimate and submit and nothing is reserved; .docx still converts', async (t) => {
    const saved = process.env.SOFFICE_PATH;
    process.env.SOFFICE_PATH = path.join(docs, 'no-such-soffice');
    t.teardown(() => { if (saved === undefined) delete process.env.SOFFICE_PATH; else process.env.SOFFICE_PATH = saved; });
    const before = await balance();
    const cases: Array<[string, string, string]> = [
      ['word', 'letter.doc', 'libreoffice-writer-nogui'],
      ['excel', 'harvest.xls', 'libreoffice-calc-nogui'],
      ['powerpoint', 'review.odp', 'libreoffice-impress-nogui'],
    ];
    for (const [endpoint, name, pkg] of cases) {
      for (const p of [`/v1/convert/${endpoint}/estimate`, `/v1/convert/${endpoint}?wait=30`]) {
        const res = await w.req('POST', p, { body: form([[legacy(name), name]]) });
        const problem = await res.json() as Problem;
        t.equal(res.status, 503, `${p} ${name}: 503`);
        t.equal(problem.error, 'parser_unavailable');
        t.equal(problem.retryable, false, 'not retryable');
        t.match(problem.hint, new RegExp(`apt-get install ${pkg}.*SOFFICE_PATH`), `the hint names ${pkg}`);
        t.same(PROBLEM_FIELDS.filter((f) => (problem as unknown as Record<string, unknown>)[f] === undefined), [], 'a complete Problem');
      }
    }
    t.equal(await balance(), before, 'nothing reserved or charged');
    const docx = await buildPlain(docs, 'memo.docx', ['A memo that needs no LibreOffice.']);
    const res = await w.req('POST', '/v1/convert/word?wait=30', { body: form([[docx, 'memo.docx']]) });
    const conv = await res.json() as { status: string };
    t.equal(res.status, 200);
    t.equal(conv.status, 'completed', 'a .docx converts as before');
  });

  await t.test('an .xls renamed .xlsx converts at the Excel endpoint, charged no more than estimated', async (t) => {
    const est = await (await w.req('POST', '/v1/convert/excel/estimate', { body: form([[legacy('harvest.xls'), 'budget.xlsx']]) })).json() as { credits_total: number; sources: Array<{ pages: number }> };
    t.same(est.sources.map((s) => s.pages), [2], 'estimated as two sheets');
    const res = await w.req('POST', '/v1/convert/excel?wait=60', { body: form([[legacy('harvest.xls'), 'budget.xlsx']]) });
    const conv = await res.json() as { status: string; files: Array<{ role: string; content?: string }>; usage: { credits_reserved: number; credits_charged: number } };
    t.equal(conv.status, 'completed');
    const markdown = conv.files.find((f) => f.role === 'output')?.content ?? '';
    t.match(markdown, `## ${WORKBOOK.sheet}`);
    t.match(markdown, '| Apples | 42 |');
    t.equal(conv.usage.credits_reserved, est.credits_total, 'the reservation is the estimate');
    t.ok(conv.usage.credits_charged <= conv.usage.credits_reserved, 'the charge is within it');
  });

  await t.test('a PDF sent to the Word endpoint is a 415 whose hint names /v1/convert/pdf', async (t) => {
    const pdf = await buildReportPdf(docs);
    for (const p of ['/v1/convert/word/estimate', '/v1/convert/word?wait=10']) {
      const res = await w.req('POST', p, { body: form([[pdf, 'report.doc']]) });
      const problem = await res.json() as Problem;
      t.equal(res.status, 415, p);
      t.equal(problem.error, 'input_format_mismatch');
      t.equal(problem.hint, 'Send this file to /v1/convert/pdf.');
      t.match(problem.detail, /"report\.doc" is a PDF, not a Word document/);
    }
  });
});
