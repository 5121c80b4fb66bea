// Regression tests for what fuzzing found, each through the API: a file whose failure message
// quoted a NUL byte stayed "running" forever (Postgres jsonb refuses \u0000); a NUL past the
// sniffed head of a text file made its output unstorable; a zip whose central directory runs
// past its end threw a RangeError; tables of 200,000 rows overflowed the stack; a sparse sheet
// or CSV (cells on a diagonal) became a table of hundreds of millions of empty cells.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { strToU8, unzipSync, zipSync } from 'fflate';
import { MODES, startWorld, storeModes, type World } from '../helpers/world.js';
import { ApiError } from '../../src/errors.js';
import type { Executor } from '../../src/jobs/executor.js';
import { buildDeck } from '../fixtures/build/pptx.js';
import { buildWorkbook, replaceSheetXml } from '../fixtures/build/xlsx.js';
import { buildReport } from '../fixtures/build/docx.js';

interface FileJ { role: string; status: string; content?: string | null; error?: { error: string; detail: string } | null }
interface ConvJ { id: string; status: string; files: FileJ[] }

async function post(w: World, endpoint: string, name: string, bytes: Buffer | string, wait = 30): Promise<{ status: number; body: ConvJ & { error?: string; detail?: string } }> {
  const form = new FormData();
  form.append('file', new Blob([bytes]), name);
  if (endpoint !== 'markdown/html') form.append('formats', 'markdown,pages');
  const res = await w.req('POST', `/v1/convert/${endpoint}?wait=${wait}`, { body: form });
  return { status: res.status, body: await res.json() as ConvJ & { error?: string; detail?: string } };
}

/** ppt/slides/_rels/slide3.xml.rels of fuzz case 1184 (base seed 20240601). */
const CASE_1184_RELS = 'PD94bWwgdmVyc2lvbj0iMS4wIiBlbmNvZGluZz0iVVRGLTgiIHN0YW5kYWxvbmU9InllcyI/Pg0KPFJlbGF0aW9uc2hpcHMgeG1sbnM9Imh0dHA6Ly9zY2hlbWFzLm9wZW54bWxmb3JtYXRzLm9yZy9wYWNrYWdlLzIwMDYvcmVsYXRpb25zaGlwcyI+PFJlbGF0aW9uc2hpcCBJZD0icklkMyIgVHlwZT0iaHR0cDovL3NjaGVtYXMub3BlbnhtbGZvcm1hdHMub3JnL29mZmljZURvY3VtZW50LzIwMDYvcmVsYXRpb25zaGlwcy9oeXBlcmxpbmsiIFRhcmdldD0iaHR0cHM6Ly9leGFtcGxlLmNvbS9kZWNrIiBUYXJnZXRNb2RlPSJFeHRlcm5hbCIvPjxSZWxhdGlvbnNoaXAgSWQ9InJJZDIiIFR5cGU9Imh0dHA6Ly9zY2hlbWFzLm9wZW54bWxmb3JtYXRzLm9yZy9vZmZpY2VEb2N1bWVudC8yMDA2L3JlbGF0aW9uc2hpcHMvY2hhcnQiIFRhcmdldD0iL3BwdC9jaGFydHMvY2hhcnQyLnhtbCIvPjxSZWxhdGlvbnNoaXAgSWQ9InJJZDEiIFR5cGU9Imh0dHA6Ly9zY2hlbWFzLm9wZW54bWxmb3JtYXRzLm9yZy9vZmZpY2VEb2N1bWVudC8yMDA2L3JlbGF0aW9uc2hpcHMvaW1hZ2UiIFRhcmdldD0iLi4vbWVkaWEvaW1hZ2UtMy0xLnBuZyIvPjxSZWxhdGlvbnNoaXAgSWQ9InJJZDQiIFR5cGU9Imh0dHA6Ly9zY2hlbWFzLm9wZW54bWxmb3JtYXRzLm9yZy9vZmZpY2VEb2N1bWVudC8yMDA2L3JlbGF0aW9uc2hpcHMvc2xpZGVMYXlvdXQiIFRhcmdldD0igqFSU7UKb7CrOvGyq+lNXt6OKWuqtPcu5fjTk1Z2fK3jPWy/StUPEVs0pQTWUSsrv8uN1EjVNDuPfQGdYinRsn1eyiCwXDWdTo8WSx55U3nYEix8jk12fNfGvCzeOJeNiinmLHZ7b3AzhgLiTZOPK7ZpKiZeyNszcnIkGRod3YqPuBWngtMLtyKFs9E4O//+Yzz+iPH41Hh2YXxGzi/c2EmBHe/lD+57ZQPRsksmc0r8vplpHcGlFTZ2BTGCOaABR0f6HUK7DiAeANvr/pJx7Qh4hcmnF1BTBz56riIexvhfQEIvnarppFhMFrN5sUBdfO5RiTeIgEEc9jzD2elUfIA/qo1DGo8EjzO4y4AdfwHNP1BLAwQKAAAACABcsHZd7sF7nk0BAACWAgAAFAAAAHhsL3NoYXJlZFN0cmluZ3MueG1sbZKxTsMwEIZ3nsLyTt12QKhKXAlUFgQCWmA2yZFYcuzgc0or8RYMLBUbAwiJjYktb8JQ8RiYVCrgVGlkZTMueG1sIi8+PC9SZWxhdGlvbnNoaXBzPg==';

const source = (c: ConvJ): FileJ => c.files.find((f) => f.role === 'source')!;

for (const mode of storeModes()) {
  t.test(`fuzzing regressions (${mode})`, async (t) => {
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'docpipe-regress-'));
    const w = await startWorld(mode, { SWEEP_INTERVAL_S: '0' });
    t.teardown(async () => { await w.close(); rmSync(scratch, { recursive: true, force: true }); });

    await t.test('a deck whose XML failure quotes binary bytes fails its file instead of running forever', async (t) => {
      const files = unzipSync(readFileSync(await buildDeck(scratch)));
      // Slide 3's rels part as fuzz case 1184 left it: binary spliced into an attribute, NULs included.
      files['ppt/slides/_rels/slide3.xml.rels'] = Buffer.from(CASE_1184_RELS, 'base64');
      const r = await post(w, 'powerpoint', 'binary-rels.pptx', Buffer.from(zipSync(files)));
      t.equal(r.status, 200, 'answered inside the wait window');
      t.equal(source(r.body).status, 'failed');
      t.equal(source(r.body).error?.error, 'invalid_document');
      t.notMatch(source(r.body).error?.detail ?? '', /\u0000/, 'the stored message carries no NUL');
    });

    await t.test('a text file with NUL bytes past its first 8 KB converts, the NULs shown as U+FFFD', async (t) => {
      const text = `${'plain words here. '.repeat(600)}\n\nafter\u0000the\u0000nuls\n`;
      const r = await post(w, 'text', 'late-nul.txt', text);
      t.equal(r.status, 200);
      t.equal(source(r.body).status, 'completed', JSON.stringify(source(r.body).error));
      const md = r.body.files.find((f) => f.role === 'output' && f.content?.includes('after'))?.content ?? '';
      t.match(md, 'after\uFFFDthe\uFFFDnuls');
    });

    await t.test('a zip whose directory entry runs past the directory is invalid_document, not a RangeError', async (t) => {
      const docx = readFileSync(await buildReport(scratch, 'cd.docx'));
      // The last central directory entry's extra-field length points far past the end.
      const eocd = docx.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
      const cdStart = docx.readUInt32LE(eocd + 16);
      const lastEntry = docx.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]), eocd);
      t.ok(lastEntry >= cdStart);
      const broken = Buffer.from(docx);
      broken.writeUInt16LE(0xfff0, lastEntry + 30);
      const r = await post(w, 'word', 'broken-directory.docx', broken);
      t.equal(r.status, 422);
      t.equal(r.body.error, 'invalid_document');
      t.match(r.body.detail, /broken (central directory|extra field)/);
      t.notMatch(r.body.detail, /offset|out of range/);
    });

    await t.test('a CSV of 200,000 rows converts (no Math.max over every row)', async (t) => {
      const csv = `id,value\n${Array.from({ length: 200_000 }, (_, i) => `${i},v${i}`).join('\n')}\n`;
      const r = await post(w, 'excel', 'long.csv', csv, 60);
      t.equal(r.status, 200);
      t.equal(source(r.body).status, 'completed', JSON.stringify(source(r.body).error));
    });

    await t.test('a CSV whose one wide row spans 20,000 columns over 20,000 short rows fails fast instead of building 400M cells', async (t) => {
      const csv = `${'a,'.repeat(19_999)}a\n${'x\n'.repeat(20_000)}`;
      const r = await post(w, 'excel', 'wide-and-long.csv', csv);
      t.equal(r.status, 200);
      t.equal(source(r.body).status, 'failed');
      t.match(source(r.body).error?.detail, /20001 rows × 20000 columns/);
    });

    await t.test('a sparse sheet (cells on a diagonal) fails fast instead of building 400M cells', async (t) => {
      const col = (n: number): string => { let s = ''; for (n++; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(65 + ((n - 1) % 26)) + s; return s; };
      const cells = Array.from({ length: 16_000 }, (_, i) => `<row r="${i + 1}"><c r="${col(i)}${i + 1}"><v>${i}</v></c></row>`).join('');
      const xml = `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${cells}</sheetData></worksheet>`;
      const file = replaceSheetXml(await buildWorkbook(scratch, 'diag-base.xlsx'), path.join(scratch, 'diag.xlsx'), xml);
      const r = await post(w, 'excel', 'diag.xlsx', readFileSync(file));
      t.equal(r.status, 200);
      t.equal(source(r.body).status, 'failed');
      t.match(source(r.body).error?.detail, /16000 rows × 16000 columns/);
      t.ok(strToU8('x').length === 1);
    });
  });
}

// FINDING: a failure's Problem quoting U+0000 (jsonb refuses it) could not be stored, so the
// file stayed "running". fileProblem (errors.ts) now replaces NULs.
t.test('a failure whose message holds a NUL still ends its file', async (t) => {
  const nulExecutor: Executor = {
    run: async () => { throw new ApiError('invalid_document', 'the parser quoted \u0000 a NUL'); },
    queued: () => 0,
    close: async () => {},
  };
  const w = await startWorld(MODES[0]!, { SWEEP_INTERVAL_S: '0' }, { executor: nulExecutor });
  t.teardown(() => w.close());
  const res = await w.req('POST', '/v1/convert/text?wait=5', { json: { text: 'anything' } });
  const body = await res.json() as ConvJ;
  t.equal(res.status, 200, 'the conversion ends inside the wait window');
  t.equal(source(body).status, 'failed');
});
