// Each legacy and open format converts through LibreOffice's OOXML twin with its known text and
// its table, and is charged the twin's count, never more than it was priced at: the committed
// fixtures (test/fixtures/build/legacy.ts) through the Word, Excel and PowerPoint converters.
// And a document cannot make LibreOffice pull a file of the server into its text. One real
// soffice run per case.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { excelConverter } from '../../../src/converters/excel.js';
import { powerpointConverter } from '../../../src/converters/powerpoint.js';
import { wordConverter } from '../../../src/converters/word.js';
import type { Converter } from '../../../src/converters/types.js';
import { DECK, LEGACY_DIR, LETTER, WORKBOOK } from '../../fixtures/build/legacy.js';
import { makeCtx } from '../../helpers/convert-ctx.js';

const gfm = (rows: string[][]): string => [
  `| ${rows[0]!.join(' | ')} |`, `| ${rows[0]!.map(() => '---').join(' | ')} |`, ...rows.slice(1).map((r) => `| ${r.join(' | ')} |`),
].join('\n');

const CASES: Array<{ file: string; conv: Converter; mime: string; must: string[] }> = [
  ...['doc', 'odt', 'rtf'].map((ext) => ({
    file: `letter.${ext}`, conv: wordConverter,
    mime: { doc: 'application/msword', odt: 'application/vnd.oasis.opendocument.text', rtf: 'application/rtf' }[ext]!,
    must: [`# ${LETTER.heading}`, LETTER.sentence, gfm(LETTER.table), LETTER.closing],
  })),
  ...['xls', 'ods'].map((ext) => ({
    file: `harvest.${ext}`, conv: excelConverter,
    mime: { xls: 'application/vnd.ms-excel', ods: 'application/vnd.oasis.opendocument.spreadsheet' }[ext]!,
    must: [`## ${WORKBOOK.sheet}\n\n${gfm(WORKBOOK.table)}`, '## Notes', WORKBOOK.notes],
  })),
  ...['ppt', 'odp'].map((ext) => ({
    file: `review.${ext}`, conv: powerpointConverter,
    mime: { ppt: 'application/vnd.ms-powerpoint', odp: 'application/vnd.oasis.opendocument.presentation' }[ext]!,
    must: ['<!-- Slide 1 -->', DECK.title, DECK.point, '<!-- Slide 2 -->', DECK.tableTitle, gfm(DECK.table)],
  })),
];

for (const c of CASES) {
  t.test(`${c.file} converts with its text and its table, charged no more than priced`, async (t) => {
    const ctx = makeCtx();
    t.teardown(() => ctx.cleanup());
    const file = path.join(LEGACY_DIR, c.file);
    const priced = await c.conv.count(file, { formats: ['markdown'] });
    const result = await c.conv.convert(file, { formats: ['markdown'] }, ctx);
    for (const s of c.must) t.ok(result.markdown.includes(s), `has ${JSON.stringify(s.slice(0, 60))}`);
    t.equal(result.mime, c.mime, 'reported as the format it was');
    t.ok(result.units !== undefined && result.units <= priced.units, `the twin's ${result.units} units are within the ${priced.units} priced`);
    t.equal(result.units, priced.units, 'and here they are the same');
  });
}

t.test('an RTF field that includes a file of the server keeps its stored result, never the file', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-legacy-include-'));
  const ctx = makeCtx();
  t.teardown(() => { ctx.cleanup(); rmSync(dir, { recursive: true, force: true }); });
  const secret = path.join(dir, 'secret.txt');
  writeFileSync(secret, 'SERVER-SECRET-4711');
  const rtf = path.join(dir, 'include.rtf');
  writeFileSync(rtf, `{\\rtf1\\ansi\\pard Before.\\par {\\field{\\*\\fldinst INCLUDETEXT "${secret}"}{\\fldrslt stored result}}\\par After.\\par}`);
  const result = await wordConverter.convert(rtf, { formats: ['markdown'] }, ctx);
  t.match(result.markdown, 'Before.');
  t.match(result.markdown, 'stored result');
  t.notMatch(result.markdown, 'SERVER-SECRET');
});
