// Right-to-left scripts in PDFs: Arabic and Hebrew text comes out in logical order, with the
// numbers and Latin words set inside it in place and apart from their neighbours.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { pdfConverter } from '../../src/converters/pdf.js';
import { convertWith } from '../helpers/convert-ctx.js';
import * as build from '../fixtures/build/pdf.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pdf-rtl-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('Arabic and Hebrew paragraphs read in logical order, numbers and Latin words in place', { skip: existsSync(build.RTL_FONT) ? false : `needs ${build.RTL_FONT} (Debian fonts-dejavu-core)` }, async (t) => {
  const file = await build.buildRtlPdf(dir);
  const { markdown } = await convertWith(pdfConverter, file);
  const paras = markdown.trim().split('\n\n').filter((p) => !p.startsWith('<!--'));
  t.same(paras, [build.RTL_LINES.arabic.join(' '), build.RTL_LINES.hebrew.join(' ')], 'each script one paragraph, word for word');
});

t.test('a line of right-to-left script puts its pieces right to left, a left-to-right line left to right', { skip: existsSync(build.RTL_FONT) ? false : 'needs DejaVu Sans' }, async (t) => {
  const file = await build.buildRtlPdf(dir, 'rtl-pages.pdf');
  const { pages } = await convertWith(pdfConverter, file, { formats: ['pages'] });
  t.match(pages?.[0] ?? '', 'في عام 2023 حوالي 450 مليون', 'the number follows the word before it in reading order');
  t.match(pages?.[0] ?? '', 'מערכת Linux עזרה', 'the Latin word between its Hebrew neighbours');
});
