// Tables the PDF converter finds at the default quality without any rules drawn, and what it
// must not take for a table: on PDFs built with known content (test/fixtures/build/pdf.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { pdfConverter } from '../../src/converters/pdf.js';
import { convertWith } from '../helpers/convert-ctx.js';
import * as build from '../fixtures/build/pdf.js';
import * as text from '../fixtures/build/pdf-text.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pdf-tables-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** The GFM table rows of `md` as cell arrays (the delimiter row left out). */
function tableRows(md: string): string[][] {
  return md.split('\n').filter((l) => l.startsWith('|') && !/^\|( -+ \|)+$/.test(l))
    .map((l) => l.slice(1, -1).split('|').map((c) => c.trim()));
}

t.test('an unruled numeric table with gutters narrower than an em is split into its true columns', async (t) => {
  const file = await build.buildNarrowGutterTablePdf(dir);
  const { markdown } = await convertWith(pdfConverter, file);
  t.same(tableRows(markdown), build.STATS_ROWS, 'every number in its own cell, at the default quality');
  t.match(markdown, 'Enrolment by state and year, all institutions.');
  t.match(markdown, 'Counts are head counts in the autumn term.');
  t.notMatch(markdown, '2,753,438 2,799,250', 'no numbers merged into one cell');
});

t.test('a table continued on the next page under a repeated header becomes one table', async (t) => {
  const file = await build.buildContinuedTablePdf(dir);
  const { markdown, pages } = await convertWith(pdfConverter, file);
  const tables = markdown.split('\n\n').filter((b) => b.startsWith('|'));
  t.equal(tables.length, 1, 'one table');
  t.same(tableRows(tables[0] ?? ''), [['Part', 'Count', 'Price'], ...build.CONTINUED_ROWS], 'its rows in order, the header once');
  t.ok(markdown.indexOf('<!-- page 2 -->') > markdown.indexOf('| Part N |'), 'the page 2 marker follows the table');
  t.ok(markdown.indexOf('<!-- page 2 -->') < markdown.indexOf('Prices are in euros'), 'and precedes the text after it');
  t.equal(pages?.length, 2, 'pages output still has one entry per page');
  t.match(pages?.[1] ?? '', '| Part H |', 'each page keeps its own part of the table');
});

t.test('a page of two-column prose is read as paragraphs, not as a table', async (t) => {
  const file = await build.buildTwoColumnProsePdf(dir);
  const { markdown } = await convertWith(pdfConverter, file);
  t.notMatch(markdown, '|', 'no table');
  t.match(markdown, 'The committee met in March to review the budget for the coming year. Members agreed');
  t.match(markdown, 'Several members asked for a clearer account of travel costs.');
  t.ok(markdown.indexOf('next meeting in April.') < markdown.indexOf('Several members asked'), 'left column first');
});

t.test('names set in the margin beside the lines of a paragraph are not a table with the paragraph', async (t) => {
  const { markdown } = await convertWith(pdfConverter, await text.buildMarginNotesPdf(dir));
  t.notMatch(markdown, '|', 'no table');
  t.match(markdown, new RegExp(`^# ${text.MARGIN.heading}$`, 'm'), 'the section title is a heading');
  for (const line of text.MARGIN.text) t.match(markdown, line, 'each line of the text is there');
  t.ok(markdown.indexOf(text.MARGIN.text[1]!) < markdown.indexOf(text.MARGIN.text[2]!), 'in reading order');
});

t.test('label–value lines of a form stay lines in reading order, not a table', async (t) => {
  const file = await build.buildKeyValuePdf(dir);
  const { markdown } = await convertWith(pdfConverter, file);
  t.notMatch(markdown, '| ', 'no table');
  const lines = markdown.split('\n').map((l) => l.replace(/\*\*/g, '').trim()).filter((l) => l !== '');
  const at = build.KEY_VALUES.map(([label, value]) => lines.indexOf(`${label} ${value}`));
  t.ok(at.every((i) => i >= 0), 'each label with its value as a line of its own');
  t.same([...at].sort((a, b) => a - b), at, 'in reading order');
  t.notMatch(markdown, /^#+ .*Report ID/m, 'a field is not a heading');
});

t.test('table_mode accurate finds the same tables', async (t) => {
  const file = await build.buildNarrowGutterTablePdf(dir, 'narrow-accurate.pdf');
  const { markdown } = await convertWith(pdfConverter, file, { table_mode: 'accurate' });
  t.same(tableRows(markdown), build.STATS_ROWS);
});
