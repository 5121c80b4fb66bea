// Legacy files are priced from their own structure, without LibreOffice: the committed fixtures
// count what they hold (one Word page, two sheets of seven cells, two slides), RTF text is
// counted outside control words and hidden groups, and a damaged file (truncated, a zip bomb)
// is priced by its size instead of refusing the whole request.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { countLegacy } from '../../../src/converters/legacy/count.js';
import { excelConverter } from '../../../src/converters/excel.js';
import { wordConverter } from '../../../src/converters/word.js';
import { LEGACY_DIR, WORKBOOK } from '../../fixtures/build/legacy.js';
import { entry, writeZip, zeroDeflate } from '../../fixtures/build/zip.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-legacy-count-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const fixture = (name: string): string => path.join(LEGACY_DIR, name);

t.test('the fixtures count what they hold', async (t) => {
  for (const name of ['letter.doc', 'letter.odt', 'letter.rtf']) t.same(await countLegacy(fixture(name), name.slice(-3) as 'doc'), { pages: 1, units: 1 }, name);
  for (const name of ['harvest.xls', 'harvest.ods']) t.same(await countLegacy(fixture(name), name.slice(-3) as 'xls'), { pages: 2, units: WORKBOOK.cells }, name);
  for (const name of ['review.ppt', 'review.odp']) t.same(await countLegacy(fixture(name), name.slice(-3) as 'ppt'), { pages: 2, units: 2 }, name);
});

t.test('RTF text is counted outside control words, font tables, hidden destinations and Unicode fallbacks', async (t) => {
  const body = 'x'.repeat(2989);
  const rtf = [
    '{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Times New Roman;}}{\\colortbl;\\red0\\green0\\blue0;}',
    '{\\*\\generator Hand 1.0;}{\\info{\\title Not counted}}',
    `\\pard ${body}\\par`, // 2989 + 1 for the paragraph mark
    'caf\\u233?\\\'e9 {\\*\\bkmkstart b}end', // café, é, a space, end: 4 + 1 + 1 + 3
    '\\par}',
  ].join('\n');
  const file = path.join(dir, 'count.rtf');
  writeFileSync(file, rtf, 'latin1');
  // 2989 + 1 + 9 + 1 = 3000 characters: exactly one page.
  t.same(await countLegacy(file, 'rtf'), { pages: 1, units: 1 });
  writeFileSync(file, rtf.replace('end', 'end!'), 'latin1');
  t.same(await countLegacy(file, 'rtf'), { pages: 2, units: 2 }, 'one character more starts a second page');
});

t.test('a truncated .doc is priced by its size instead of refusing the request', async (t) => {
  const file = path.join(dir, 'cut.doc');
  writeFileSync(file, readFileSync(fixture('letter.doc')).subarray(0, 3000));
  const count = await wordConverter.count(file, { formats: ['markdown'] });
  t.ok(count.pages >= 1 && count.units >= 1, `priced: ${JSON.stringify(count)}`);
});

t.test('a zip-bombed .ods is priced by its size, never inflated', async (t) => {
  const file = path.join(dir, 'bomb.ods');
  writeZip(file, [
    { name: 'mimetype', data: Buffer.from('application/vnd.oasis.opendocument.spreadsheet'), method: 0, size: 46 },
    { name: 'content.xml', data: zeroDeflate(2048), method: 8, size: 2048 * 1024 * 1024 },
    entry('META-INF/manifest.xml', '<manifest:manifest/>'),
  ]);
  const before = process.memoryUsage().rss;
  const count = await excelConverter.count(file, { formats: ['markdown'] });
  t.equal(count.pages, 1);
  t.ok(count.units > 0, `priced by size: ${count.units} cells`);
  t.ok(process.memoryUsage().rss - before < 512 * 1024 * 1024, 'nothing close to the 2 GiB it claims was inflated');
});
