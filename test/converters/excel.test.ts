import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { excelConverter } from '../../src/converters/excel.js';
import type { Peek } from '../../src/converters/types.js';
import { convertWith, makeCtx, peekOf } from '../helpers/convert-ctx.js';
import { buildReport } from '../fixtures/build/docx.js';
import { buildDate1904Workbook, buildGridWorkbook, buildWorkbook, replaceSheetXml, writeCsv } from '../fixtures/build/xlsx.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-excel-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));


const NOISE = ['NaN', 'undefined', 'null', '[object Object]', 'Unnamed', '| --- |\n|  |'];

interface Vector {
  name: string;
  build: () => Promise<string> | string;
  must: string[];
  mustNot: string[];
}

const vectors: Vector[] = [
  {
    name: 'a workbook keeps sheet names, header rows, cached formula values, ISO dates and links',
    build: () => buildWorkbook(dir),
    must: [
      '## Sales\n\n| Region | Q1 | Q2 | Total | Since | Site |\n| --- | --- | --- | --- | --- | --- |\n',
      '| North \\| East | 1200.5 | 1300.25 | 2500.75 | 2021-03-15 | [Example site](https://example.com/north) |',
      '| South | 900 | 950 | 1850 | 2019-12-01 |  |',
      // rich text, a formula error, an error value, a boolean formula, a percentage, a string formula
      '| Bold and plain | #DIV/0! | #N/A | TRUE | 12.5% | x<y & z |',
      // B7:B8 merged down: repeated; D7:F7 merged across: only in its first cell
      '| West | 10 | Merged across |  |  |  |',
      '| West | 20 | 2024-01-02T13:45:30 |  |  |  |',
      '|  | line one<br>line two |',
      '## Empty\n\n*(empty sheet)*',
      '## Notes | Misc\n\n| Key | Value |',
      '| pi | 0.3 |',
      '| ünïcödé ✓ | 日本語 |',
    ],
    mustNot: [...NOISE, 'C4+D4', '1/0', 'TEXT(', '0.30000000000000004', '| Region | Q1 | Q2 | Total | Since | Site |  |', '|  | Region'],
  },
  {
    name: 'a workbook in the 1904 date system still shows its dates and times in ISO 8601',
    build: () => buildDate1904Workbook(dir),
    must: ['## Dates\n\n| When | Time |\n| --- | --- |\n| 2020-02-29 | 18:00:00 |\n'],
    mustNot: [...NOISE, '42428', '0.75', '2016-'],
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
    t.notMatch(markdown, /\n{3,}|[ \t]+\n|\*\*\s|\s\*\*(?!\S)/, 'no stray blank lines, trailing spaces or ** around spaces');
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

t.test('a large workbook converts and counts in reasonable time', async (t) => {
  const file = await buildGridWorkbook(dir, 2, 5000, 10);
  const start = Date.now();
  t.same(await excelConverter.count(file, { formats: ['markdown'] }), { pages: 2, units: 100_000 });
  const r = await convertWith(excelConverter, file);
  const ms = Date.now() - start;
  // 5,000 rows per sheet (the first one the header) plus one separator line each.
  t.equal(r.markdown.split('\n').filter((l) => l.startsWith('| ')).length, 10_002);
  t.ok(r.markdown.includes('| 5000000 | 5000001 |'), 'last row present');
  // a bound only a hang reaches; the speed of large workbooks is the bench's to measure
  t.ok(ms < 120_000, `count + convert took ${ms} ms`);
});

t.test('a sheet of 200,000 unclosed cells is read in linear time, not matched quadratically', async (t) => {
  const base = await buildWorkbook(dir, 'hostile-base.xlsx');
  const cells = Array.from({ length: 200_000 }, (_, i) => `<c r="A${i + 1}" t="inlineStr"><is><t>v${i}`).join('');
  const file = replaceSheetXml(base, path.join(dir, 'hostile.xlsx'), `<worksheet><sheetData><row r="1">${cells}`);
  const start = Date.now();
  const { markdown } = await convertWith(excelConverter, file);
  t.same(await excelConverter.count(file, { formats: ['markdown'] }), { pages: 3, units: 6 });
  const ms = Date.now() - start;
  // quadratic matching over 200,000 cells takes many minutes; linear reading, well under one
  t.ok(ms < 60_000, `convert + count took ${ms} ms, not quadratic`);
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
