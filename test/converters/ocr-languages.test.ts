// OCR in the language of the text: `languages` picks the models (from the @tesseract.js-data
// packages in node_modules), for scanned PDF pages and for images; the API refuses a code it
// does not ship, at submit and at estimate.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { imageConverter } from '../../src/converters/image.js';
import { pdfConverter } from '../../src/converters/pdf.js';
import { terminateOcr } from '../../src/converters/shared/ocr.js';
import { convertWith } from '../helpers/convert-ctx.js';
import { oneMode, PROBLEM_FIELDS, startWorld } from '../helpers/world.js';
import * as build from '../fixtures/build/pdf.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-ocr-lang-'));
t.teardown(async () => { await terminateOcr(); rmSync(dir, { recursive: true, force: true }); });

async function expectProblem(t: Test, res: Response, status: number, code: string): Promise<Record<string, string>> {
  t.equal(res.status, status, `${code} is ${status}`);
  const p = await res.json() as Record<string, string>;
  t.equal(p.error, code);
  t.ok(PROBLEM_FIELDS.every((f) => f in p), 'every Problem field');
  return p;
}

const GERMAN_WORDS = ['größten', 'Änderungen', 'Übungen', 'Schüler', 'Mädchen', 'lösen', 'täglich', 'schöne'];

t.test('a German scan read with languages ["deu"] keeps its umlauts and ß', async (t) => {
  const file = await build.buildGermanScanPdf(dir);
  const { markdown } = await convertWith(pdfConverter, file, { languages: ['deu'] });
  for (const w of GERMAN_WORDS) t.match(markdown, w, `has "${w}"`);
});

t.test('an image of German text read with languages ["deu", "eng"] keeps its umlauts', async (t) => {
  const png = path.join(dir, 'german.png');
  writeFileSync(png, await build.renderTextPng(build.GERMAN_SENTENCES, { fontSize: 18 }));
  const { markdown } = await convertWith(imageConverter, png, { languages: ['deu', 'eng'] });
  for (const w of GERMAN_WORDS) t.match(markdown, w, `has "${w}"`);
});

for (const mode of oneMode()) {
  t.test(`${mode}: an unknown OCR language is a 400 naming it, at submit and at estimate`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    for (const p of ['/v1/convert/pdf', '/v1/convert/pdf/estimate', '/v1/convert/image']) {
      const fd = new FormData();
      fd.append('languages', 'eng,klingon');
      fd.append('file', new File([Buffer.from('%PDF-1.4\n')], 'a.pdf', { type: 'application/pdf' }));
      const problem = await expectProblem(t, await w.req('POST', p, { key: w.key, body: fd }), 400, 'invalid_request');
      t.match(problem.detail, '"klingon"', `${p}: the detail names the code`);
      t.match(problem.detail, 'deu', `${p}: and lists the codes there are`);
    }
    const res = await w.req('POST', '/v1/convert/pdf', { key: w.key, json: { file: 'file_x', languages: [] } });
    await expectProblem(t, res, 400, 'invalid_request');
  });
}
