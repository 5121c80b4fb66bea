import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createExcelConverter, excelConverter } from '../../src/converters/excel.js';
import type { Peek } from '../../src/converters/types.js';
import { columnName } from '../../src/converters/office/xlsx-sheet.js';
import { convertWith, makeCtx, peekOf } from '../helpers/convert-ctx.js';
import { buildReport } from '../fixtures/build/docx.js';
import {
  buildChartSheetWorkbook, buildDate1904Workbook, buildFormatsWorkbook, buildGridWorkbook, buildHiddenWorkbook, buildLayoutWorkbook,
  buildLoneCellsWorkbook, buildWorkbook, FORMAT_ROWS, replaceSheetXml, writeCsv,
} from '../fixtures/build/xlsx.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-excel-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));


const NOISE = ['NaN', 'undefined', 'null', '[object Object]', 'Unnamed', '| --- |\n|  |'];

/** What Excel (en-US) shows for each row of FORMAT_ROWS, by label. */
const SHOWN: Record<string, string> = {
  'Date dd/mm/yyyy': '15/03/2021',
  'Date d-mmm-yy': '15-Mar-21',
  'Date long': 'Monday, March 15, 2021',
  'Date default': '2021-03-15', // the locale's short date (numFmtId 14) as ISO 8601
  'Date and time': '2021-03-15 09:05',
  'Time': '6:00 PM',
  'Duration': '36:00',
  'Percent': '26%',
  'Percent fixed': '25.68%',
  'Dollars': '$1,234,567.89',
  'Dollars negative': '($1,234.50)',
  'Euros': '1,234.50 €',
  'Accounting zero': '$-',
  'Thousands': '9,876,543',
  'Fixed': '3.142',
  'Rounded half up': '2.68',
  'Scientific': '1.23E+05',
  'Fraction': '1 1/2',
  'Millions': '12.3M',
  'Code': '00042',
  'Unit': '12 kg',
  'Plain': '1200.5',
};

interface Vector {
  name: string;
  build: () => Promise<string> | string;
  must: string[];
  mustNot: string[];
}

const vectors: Vector[] = [
  {
    name: 'a workbook keeps sheet names, header rows, cached formula values, formatted dates and links',
    build: () => buildWorkbook(dir),
    must: [
      '## Sales\n\n| Region | Q1 | Q2 | Total | Since | Site |\n| --- | --- | --- | --- | --- | --- |\n',
      '| North \\| East | 1200.5 | 1300.25 | 2500.75 | 2021-03-15 | [Example site](https://example.com/north) |',
      '| South | 900 | 950 | 1850 | 2019-12-01 |  |',
      // rich text, a formula error, an error value, a boolean formula, a percentage, a string formula
      '| Bold and plain | #DIV/0! | #N/A | TRUE | 12.5% | x<y & z |',
      // B7:B8 merged down: repeated; D7:F7 merged across: only in its first cell
      '| West | 10 | Merged across |  |  |  |',
      '| West | 20 | 2024-01-02 13:45:30 |  |  |  |',
      '|  | line one<br>line two |',
      '## Empty\n\n*(empty sheet)*',
      '## Notes | Misc\n\n| Key | Value |',
      '| pi | 0.3 |',
      '| ünïcödé ✓ | 日本語 |',
    ],
    mustNot: [...NOISE, 'C4+D4', '1/0', 'TEXT(', '0.30000000000000004', '| Region | Q1 | Q2 | Total | Since | Site |  |', '|  | Region'],
  },
  {
    name: 'a workbook in the 1904 date system shows its dates and times through their formats',
    build: () => buildDate1904Workbook(dir),
    must: ['## Dates\n\n| When | Time |\n| --- | --- |\n| 29/02/2020 | 6:00 PM |\n'],
    mustNot: [...NOISE, '42428', '0.75', '2016-'],
  },
  {
    name: 'a sheet with dates, percentages, currency, thousands and fixed decimals shows them as formatted',
    build: () => buildFormatsWorkbook(dir),
    must: FORMAT_ROWS.map(([label]) => `| ${label} | ${SHOWN[label]} |\n`),
    mustNot: [...NOISE, '44270', '0.256', '1234567.891', '9876543 ', '3.14159', 'T09:05', '[$', '"$"', '_('],
  },
  {
    name: 'a sheet laid out in blocks gives a title line and trimmed tables, each followed by its comments and their authors',
    build: () => buildLayoutWorkbook(dir),
    must: [
      '## Report\n\nQuarterly report\n\n**Comments:**\n- A1 (Carol White): Draft, do not circulate\n\n'
      + '| Region | Q1 | Q2 |\n| --- | --- | --- |\n| North | 1,200.50 | 1,300.00 |\n| South | 900.00 | 950.25 |\n| West | 15,000.00 | 16,000.00 |\n\n'
      + '**Comments:**\n- D5 (Alice Smith): Check this figure.\n  It looks high.\n- E6 (Bob Jones): Is this final?\n  - Alice Smith: Yes, signed off.\n\n'
      + '| Key | Value |\n| --- | --- |\n| Owner | Finance |\n\nSource: internal ledger\n\n',
      // a title merged across the table right under it is a line, not the table's header
      '## Banner\n\nStaff 2024\n\n| Name | Team | Since |\n| --- | --- | --- |\n| Ann | Ops | 2019 |\n| Ben | Dev | 2021 |\n',
    ],
    mustNot: [...NOISE, '| Quarterly report', '| Staff 2024', '|  | Region', 'Region |  |', '[Threaded comment]', 'Author', 'tc={', 'Alice Smith:\n'],
  },
  {
    name: 'a lone cell is a line of its own, never a heading, a list or a one-cell table',
    build: () => buildLoneCellsWorkbook(dir),
    must: ['## Lines\n\n\\# not a heading\n\n\\- not a list\n\n1\\. not a list\n\nfirst line\\\nsecond line\n\n50%\n'],
    mustNot: [...NOISE, '|'],
  },
  {
    name: 'hidden sheets, rows and columns are skipped, with a comment line saying so',
    build: () => buildHiddenWorkbook(dir),
    must: [
      '## Visible\n\n<!-- hidden row 3 and column B skipped -->\n\n| Name | Team |\n| --- | --- |\n| Ann | Ops |\n| Ben | Dev |\n\n',
      '<!-- sheet "Secret" skipped: hidden -->\n\n<!-- sheet "Macros" skipped: hidden -->\n',
    ],
    mustNot: [...NOISE, 'Old row', 'gone', 'Salary', '50000', '50,000', 'classified', 'internal', '## Secret', '## Macros', 'column D'],
  },
  {
    name: "a chart sheet gives its chart's title and data table",
    build: () => buildChartSheetWorkbook(dir),
    must: ['## Chart1\n\n**Chart: Sales by region**\n\n|  | Q1 | Q2 |\n| --- | --- | --- |\n| North | 10 | 12 |\n| South | 7.5 | 9 |\n'],
    mustNot: [...NOISE, '(chart sheet)'],
  },
  {
    name: 'a Shift_JIS CSV is decoded and its quoted comma stays in its field',
    build: () => writeCsv(dir, 'sjis.csv', '名前,値\r\n東京,1\r\n大阪,"2,5"\r\n', 'shift_jis'),
    must: ['| 名前 | 値 |\n| --- | --- |\n| 東京 | 1 |\n| 大阪 | 2,5 |\n'],
    mustNot: [...NOISE, '�', '##'],
  },
  {
    name: 'a Windows-1252 CSV with semicolons keeps € and curly quotes, and unescapes doubled quotes',
    build: () => writeCsv(dir, 'cp1252.csv', 'Name;Preis\r\nCafé;3,50 €\r\n"Zürich ""Alt""";“quoted”\r\n', 'windows-1252'),
    must: ['| Name | Preis |', '| Café | 3,50 € |', '| Zürich "Alt" | “quoted” |'],
    mustNot: [...NOISE, '�', 'Ã', '""'],
  },
  {
    name: 'a UTF-8 CSV with a BOM, tabs and a quoted newline keeps the newline inside its cell',
    build: () => writeCsv(dir, 'bom.csv', 'a\tb\n"multi\nline"\tx\n\n\n', 'utf-8', true),
    must: ['| a | b |\n| --- | --- |\n| multi<br>line | x |\n'],
    mustNot: [...NOISE, '\uFEFF', 'ï»¿'],
  },
  {
    name: 'a pipe-delimited CSV with trailing delimiters loses its empty last column',
    build: () => writeCsv(dir, 'pipe.csv', 'x|y|z|\n1|2|3|\n4||6|\n'),
    must: ['| x | y | z |\n| --- | --- | --- |\n| 1 | 2 | 3 |\n| 4 |  | 6 |\n'],
    mustNot: [...NOISE, '| z |  |'],
  },
  {
    name: 'a UTF-16 CSV (Excel "Unicode text") is decoded from its BOM',
    build: () => {
      const file = path.join(dir, 'utf16.csv');
      writeFileSync(file, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('k\tv\r\nÆble\t7\r\n', 'utf16le')]));
      return file;
    },
    must: ['| k | v |\n| --- | --- |\n| Æble | 7 |'],
    mustNot: [...NOISE, '\u0000'],
  },
];

for (const v of vectors) {
  t.test(v.name, async (t) => {
    const file = await v.build();
    const { markdown } = await convertWith(excelConverter, file);
    for (const s of v.must) t.ok(markdown.includes(s), `has ${JSON.stringify(s)}`);
    for (const s of v.mustNot) t.notOk(markdown.includes(s), `lacks ${JSON.stringify(s)}`);
    t.notMatch(markdown, /\n{3,}|[ \t]+\n|(^|\s)\*\*\s|\s\*\*($|\s)/m, 'no stray blank lines, trailing spaces or ** around spaces');
    if (!v.must.some((m) => m.includes('\n'))) t.comment(markdown);
  });
}

t.test('a workbook gives one page per sheet and progress per sheet', async (t) => {
  const file = await buildWorkbook(dir, 'pages.xlsx');
  const ctx = makeCtx();
  const r = await excelConverter.convert(file, { formats: ['markdown'] }, ctx);
  ctx.cleanup();
  t.equal(r.pageCount, 3);
  t.equal(r.pages?.length, 3);
  t.match(r.pages?.[1], /^## Empty/);
  t.same(ctx.progressCalls, [[1, 3], [2, 3], [3, 3]]);
});

t.test('count gives sheets as pages and non-empty cells as units, without converting', async (t) => {
  const book = await buildWorkbook(dir, 'count.xlsx');
  // Sales holds 29 non-empty cells, Empty none, Notes 6.
  t.same(await excelConverter.count(book, { formats: ['markdown'] }), { pages: 3, units: 35 });
  const csv = writeCsv(dir, 'count.csv', 'a,b,c\n1,,3\n\n"x, y",,\n');
  t.same(await excelConverter.count(csv, { formats: ['markdown'] }), { pages: 1, units: 6 });
});

t.test('hidden and laid-out sheets are priced as before: every non-empty cell, hidden ones included', async (t) => {
  // Visible 12 cells (3 of them hidden), Secret 1, Macros 1.
  t.same(await excelConverter.count(await buildHiddenWorkbook(dir), { formats: ['markdown'] }), { pages: 3, units: 14 });
  // Report 18 cells, Banner 10.
  t.same(await excelConverter.count(await buildLayoutWorkbook(dir), { formats: ['markdown'] }), { pages: 2, units: 28 });
});

t.test('past the cell budget a sheet is cut at a row, and a note says which rows and how many cells', async (t) => {
  const file = await buildGridWorkbook(dir, 2, 10, 5);
  const small = createExcelConverter({ maxCells: 25 });
  const { markdown, pages } = await convertWith(small, file);
  t.ok(markdown.startsWith('## S1\n\n| 1000 | 1001 | 1002 | 1003 | 1004 |\n'), 'the first rows stay');
  t.ok(markdown.includes('| 5000 | 5001 | 5002 | 5003 | 5004 |\n\n'
    + '<!-- cut: rows 6–10 of this sheet (25 cells) not converted; a workbook converts at most 25 cells -->\n\n## S2'), 'cut after row 5');
  t.notOk(markdown.includes('| 6000 |'));
  t.equal(pages?.[1], '## S2\n\n<!-- cut: rows 1–10 of this sheet (50 cells) not converted; a workbook converts at most 25 cells -->',
    'a sheet past the budget is all cut, and not called empty');
  t.same(await small.count(file, { formats: ['markdown'] }), { pages: 2, units: 100 }, 'the price counts every cell');
});

t.test('a sheet of 40,000 cells each alone (a checkerboard with gaps) becomes 40,000 lines', async (t) => {
  const rows: string[] = [];
  for (let r = 1; r <= 400; r += 2) {
    const cells: string[] = [];
    for (let c = 1; c <= 400; c += 2) cells.push(`<c r="${columnName(c)}${r}"><v>${r * 1000 + c}</v></c>`);
    rows.push(`<row r="${r}">${cells.join('')}</row>`);
  }
  const xml = `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${rows.join('')}</sheetData></worksheet>`;
  const file = replaceSheetXml(await buildWorkbook(dir, 'checker-base.xlsx'), path.join(dir, 'checker.xlsx'), xml);
  const { pages } = await convertWith(excelConverter, file);
  const lines = pages![0]!.split('\n\n');
  t.equal(lines.length, 1 + 40_000, 'a heading and one line per cell');
  t.same(lines.slice(0, 3), ['## Sales', '1001', '1003']);
  t.equal(lines[lines.length - 1], '399399');
  t.notOk(pages![0]!.includes('|'), 'no one-cell tables');
});

t.test('a large workbook converts and counts whole', async (t) => {
  // The speed of large workbooks is the bench's to measure; a hang ends at the file's timeout.
  const file = await buildGridWorkbook(dir, 2, 5000, 10);
  t.same(await excelConverter.count(file, { formats: ['markdown'] }), { pages: 2, units: 100_000 });
  const r = await convertWith(excelConverter, file);
  // 5,000 rows per sheet (the first one the header) plus one separator line each.
  t.equal(r.markdown.split('\n').filter((l) => l.startsWith('| ')).length, 10_002);
  t.ok(r.markdown.includes('| 5000000 | 5000001 |'), 'last row present');
});

t.test('a sheet of 200,000 unclosed cells is read in linear time, not matched quadratically', async (t) => {
  const base = await buildWorkbook(dir, 'hostile-base.xlsx');
  const cells = Array.from({ length: 200_000 }, (_, i) => `<c r="A${i + 1}" t="inlineStr"><is><t>v${i}`).join('');
  const file = replaceSheetXml(base, path.join(dir, 'hostile.xlsx'), `<worksheet><sheetData><row r="1">${cells}`);
  // Quadratic matching over 200,000 cells takes many minutes, past the file's timeout; linear
  // reading ends in seconds. (No bound of our own: how fast is the bench's to measure.)
  const { markdown } = await convertWith(excelConverter, file);
  t.same(await excelConverter.count(file, { formats: ['markdown'] }), { pages: 3, units: 6 });
  t.ok(markdown.startsWith('## Sales\n\n*(empty sheet)*\n\n## Empty'), 'the broken sheet yields nothing, the others still convert');
  t.ok(markdown.includes('| pi | 0.3 |'));
});

t.test('accepts() knows xlsx and csv by their bytes and names, and refuses PDFs and other zips', async (t) => {
  const xlsx = await buildWorkbook(dir, 'peek.xlsx');
  t.ok(excelConverter.accepts(peekOf(xlsx)), 'xlsx by name');
  t.ok(excelConverter.accepts(peekOf(xlsx, 'upload.bin', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet')), 'xlsx by mime');
  const csv = writeCsv(dir, 'peek.csv', 'a,b\n1,2\n');
  t.ok(excelConverter.accepts(peekOf(csv)), 'csv by name');
  t.ok(excelConverter.accepts(peekOf(csv, 'data', 'text/csv; charset=utf-8')), 'csv by mime');
  t.notOk(excelConverter.accepts(peekOf(csv, 'notes.txt')), 'plain text without a csv name or type');
  const pdf = path.join(dir, 'fake.csv');
  writeFileSync(pdf, '%PDF-1.7\n%\u00e2\u00e3\n1 0 obj\n');
  t.notOk(excelConverter.accepts(peekOf(pdf)), 'a PDF named .csv');
  const binary = path.join(dir, 'binary.csv');
  writeFileSync(binary, Buffer.from([0x41, 0x00, 0x42, 0x2c, 0x00]));
  t.notOk(excelConverter.accepts(peekOf(binary)), 'NUL bytes are not CSV');
  const docx = await buildReport(dir, 'peek.docx');
  t.notOk(excelConverter.accepts(peekOf(docx)), 'a docx');
});

t.test('a Word document sent as Excel is an input_format_mismatch', async (t) => {
  const docx = await buildReport(dir, 'wrong.docx');
  const renamed = path.join(dir, 'wrong.xlsx');
  writeFileSync(renamed, (await import('node:fs')).readFileSync(docx));
  await t.rejects(convertWith(excelConverter, renamed), { code: 'input_format_mismatch', message: /Word document, not a Excel|Word document/ });
  await t.rejects(excelConverter.count(renamed, { formats: ['markdown'] }), { code: 'input_format_mismatch' });
});

t.test('a cancelled conversion stops before reading sheets', async (t) => {
  const file = await buildWorkbook(dir, 'abort.xlsx');
  const ac = new AbortController();
  ac.abort(new Error('cancelled by test'));
  await t.rejects(convertWith(excelConverter, file, {}, { signal: ac.signal }), { message: 'cancelled by test' });
});
