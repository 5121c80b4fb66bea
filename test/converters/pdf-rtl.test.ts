// Right-to-left scripts in PDFs: Arabic and Hebrew text comes out in logical order, with the
// numbers and Latin words set inside it in place and apart from their neighbours; headings and
// tables work as in left-to-right documents.
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

t.test('an Arabic report keeps its headings at their depth and its table, rightmost column first', { skip: existsSync(build.RTL_BOLD_FONT) ? false : `needs ${build.RTL_BOLD_FONT} (Debian fonts-dejavu-core)` }, async (t) => {
  const { markdown } = await convertWith(pdfConverter, await build.buildRtlReportPdf(dir));
  const r = build.RTL_REPORT;
  t.same(markdown.split('\n').filter((l) => l.startsWith('#')), [`# ${r.title}`, ...r.sections.map((s) => `# ${s}`)],
    'the title and the numbered sections, numbers first as they are read');
  const table = [r.table[0]!, r.table[0]!.map(() => '---'), ...r.table.slice(1)].map((row) => `| ${row.join(' | ')} |`).join('\n');
  t.match(markdown, table, 'the columns from the right, each cell in logical order');
  for (const lines of r.text) t.match(markdown, lines.join(' '), 'the paragraphs around it in order');
  t.ok(markdown.indexOf(r.sections[0]!) < markdown.indexOf(r.table[1]![0]!) && markdown.indexOf(r.table[3]![0]!) < markdown.indexOf(r.sections[1]!),
    'the table between the two sections');
});
