// Magic bytes decide a legacy file's type, never its name: each committed fixture is sniffed as
// its format from its first bytes (or, for a compound file whose directory lies further in, from
// the whole directory), an .xls renamed .xlsx is still taken by the Excel endpoint, a format of
// another kind is a 415 naming the endpoint that takes it, and compound files that are no Office
// document are refused with what they are.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ApiError } from '../../../src/errors.js';
import { formatOfFile, formatOfPeek, acceptsLegacy } from '../../../src/converters/legacy/formats.js';
import { OLE2_MAGIC } from '../../../src/converters/legacy/ole2.js';
import { excelConverter } from '../../../src/converters/excel.js';
import { wordConverter } from '../../../src/converters/word.js';
import { powerpointConverter } from '../../../src/converters/powerpoint.js';
import { peekFile, sniff } from '../../../src/converters/registry.js';
import { LEGACY_DIR } from '../../fixtures/build/legacy.js';
import { buildReportPdf } from '../../fixtures/build/pdf.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-legacy-formats-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const fixture = (name: string): string => path.join(LEGACY_DIR, name);
const head = (file: string): Buffer => readFileSync(file).subarray(0, 8192);

const FIXTURES = [
  ['letter.doc', 'doc', 'word'], ['letter.odt', 'odt', 'word'], ['letter.rtf', 'rtf', 'word'],
  ['harvest.xls', 'xls', 'excel'], ['harvest.ods', 'ods', 'excel'],
  ['review.ppt', 'ppt', 'powerpoint'], ['review.odp', 'odp', 'powerpoint'],
] as const;

t.test('each fixture is its format by its bytes, whatever it is called', async (t) => {
  for (const [name, format, kind] of FIXTURES) {
    const renamed = path.join(dir, `${name}.bin`);
    copyFileSync(fixture(name), renamed);
    t.equal(await formatOfFile(renamed, head(renamed)), format, `${name} is ${format}`);
    const peek = await peekFile(renamed, 'upload.bin');
    t.equal((await sniff(kind, peek)).kind, kind, `the ${kind} endpoint takes ${name} sent as upload.bin`);
  }
});

t.test('the first bytes name OpenDocument and RTF formats; a compound file whose directory lies further in waits for the whole file', async (t) => {
  t.equal(formatOfPeek(head(fixture('letter.odt'))), 'odt');
  t.equal(formatOfPeek(head(fixture('harvest.ods'))), 'ods');
  t.equal(formatOfPeek(head(fixture('review.odp'))), 'odp');
  t.equal(formatOfPeek(head(fixture('letter.rtf'))), 'rtf');
  for (const name of ['letter.doc', 'harvest.xls', 'review.ppt']) {
    const sniffed = formatOfPeek(head(fixture(name)));
    t.ok(sniffed === 'ole2' || sniffed === path.extname(name).slice(1), `${name}: ${sniffed}`);
  }
});

t.test('an .xls renamed .xlsx is taken by the Excel endpoint and refused by the Word one with the endpoint to use', async (t) => {
  const renamed = path.join(dir, 'budget.xlsx');
  copyFileSync(fixture('harvest.xls'), renamed);
  t.equal((await sniff('excel', await peekFile(renamed, 'budget.xlsx'))).kind, 'excel');
  const count = await excelConverter.count(renamed, { formats: ['markdown'] });
  t.same(count, { pages: 2, units: 7 }, 'priced as the workbook it is: two sheets, seven cells');

  // Named .doc, sent to Word: the first bytes do not reach the directory, so the count decides.
  const asDoc = path.join(dir, 'budget.doc');
  copyFileSync(fixture('harvest.xls'), asDoc);
  const err = await wordConverter.count(asDoc, { formats: ['markdown'] }).catch((e: unknown) => e);
  t.ok(err instanceof ApiError && err.code === 'input_format_mismatch', '415');
  t.match((err as Error).message, /Excel 97–2003 workbook \(\.xls\).*\/v1\/convert\/excel/);
});

t.test('an OpenDocument text named .docx is a Word source; an OpenDocument spreadsheet is not', async (t) => {
  const odt = path.join(dir, 'letter.docx');
  copyFileSync(fixture('letter.odt'), odt);
  t.equal((await sniff('word', await peekFile(odt, 'letter.docx'))).kind, 'word');
  const ods = path.join(dir, 'sheet.docx');
  copyFileSync(fixture('harvest.ods'), ods);
  t.notOk(acceptsLegacy(await peekFile(ods, 'sheet.docx'), 'word'), 'not a Word format by its bytes');
  const err = await sniff('word', await peekFile(ods, 'sheet.docx')).catch((e: unknown) => e) as ApiError;
  t.equal(err.code, 'input_format_mismatch');
  t.match(err.overrides.hint, /\/v1\/convert\/excel/, 'the hint names the Excel endpoint');
});

t.test('a PDF sent to the Word endpoint is a 415 whose hint names /v1/convert/pdf', async (t) => {
  const pdf = await buildReportPdf(dir);
  const err = await sniff('word', await peekFile(pdf, 'report.doc')).catch((e: unknown) => e) as ApiError;
  t.ok(err instanceof ApiError);
  t.equal(err.code, 'input_format_mismatch');
  t.equal(err.status, 415);
  t.match(err.message, /is a PDF, not a Word document/);
  t.equal(err.overrides.hint, 'Send this file to /v1/convert/pdf.');
});

t.test('a deck named .xls goes to the PowerPoint endpoint and is refused by the Excel one', async (t) => {
  const ppt = path.join(dir, 'deck.xls');
  copyFileSync(fixture('review.ppt'), ppt);
  t.equal((await sniff('powerpoint', await peekFile(ppt, 'deck.xls'))).kind, 'powerpoint');
  const count = await powerpointConverter.count(ppt, { formats: ['markdown'] });
  t.same(count, { pages: 2, units: 2 });
  const err = await excelConverter.count(ppt, { formats: ['markdown'] }).catch((e: unknown) => e) as ApiError;
  t.equal(err.code, 'input_format_mismatch');
  t.match(err.message, /\/v1\/convert\/powerpoint/);
});

/** A one-sector compound file whose root holds one stream of the given name. */
function compoundWith(streamName: string): Buffer {
  const b = Buffer.alloc(512 * 4);
  OLE2_MAGIC.copy(b, 0);
  b.writeUInt16LE(0x3e, 0x18);
  b.writeUInt16LE(3, 0x1a);
  b.writeUInt16LE(0xfffe, 0x1c);
  b.writeUInt16LE(9, 0x1e);
  b.writeUInt16LE(6, 0x20);
  b.writeUInt32LE(1, 0x2c); // one FAT sector
  b.writeUInt32LE(1, 0x30); // directory at sector 1
  b.writeUInt32LE(4096, 0x38);
  b.writeUInt32LE(0xfffffffe, 0x3c);
  b.writeUInt32LE(0xfffffffe, 0x44);
  b.writeUInt32LE(0, 0x4c); // FAT at sector 0
  for (let i = 1; i < 109; i++) b.writeUInt32LE(0xffffffff, 0x4c + i * 4);
  const fat = 512;
  b.writeUInt32LE(0xfffffffd, fat); // sector 0: FAT
  b.writeUInt32LE(0xfffffffe, fat + 4); // sector 1: directory, one sector
  for (let i = 2; i < 128; i++) b.writeUInt32LE(0xffffffff, fat + i * 4);
  const dir = 1024;
  const entry = (at: number, name: string, type: number, child: number): void => {
    b.write(`${name}\0`, at, 'utf16le');
    b.writeUInt16LE((name.length + 1) * 2, at + 0x40);
    b[at + 0x42] = type;
    b.writeUInt32LE(0xffffffff, at + 0x44);
    b.writeUInt32LE(0xffffffff, at + 0x48);
    b.writeUInt32LE(child, at + 0x4c);
    b.writeUInt32LE(0xfffffffe, at + 0x74);
  };
  entry(dir, 'Root Entry', 5, 1);
  entry(dir + 128, streamName, 2, 0xffffffff);
  return b;
}

t.test('compound files that hold no Office document: an encrypted package is 422, anything else 415', async (t) => {
  const enc = path.join(dir, 'secret.docx');
  writeFileSync(enc, compoundWith('EncryptedPackage'));
  const e1 = await formatOfFile(enc, head(enc)).catch((e: unknown) => e) as ApiError;
  t.equal(e1.code, 'invalid_document');
  t.match(e1.message, /password-protected/);
  const msg = path.join(dir, 'mail.msg');
  writeFileSync(msg, compoundWith('__properties_version1.0'));
  const e2 = await formatOfFile(msg, head(msg)).catch((e: unknown) => e) as ApiError;
  t.equal(e2.code, 'input_format_mismatch');
  t.match(e2.message, /no endpoint converts it/);
  writeFileSync(path.join(dir, 'ok.doc'), compoundWith('WordDocument'));
  t.equal(formatOfPeek(compoundWith('WordDocument')), 'doc', 'a directory within the first bytes is read from them');
});

t.test('a compound file whose sector chain loops is a damaged document, not a hang', async (t) => {
  const b = compoundWith('WordDocument');
  b.writeUInt32LE(1, 512 + 4); // the directory's sector points to itself
  const file = path.join(dir, 'loop.doc');
  writeFileSync(file, b);
  const err = await formatOfFile(file, head(file)).catch((e: unknown) => e) as ApiError;
  t.equal(err.code, 'invalid_document');
  t.match(err.message, /loops/);
});
