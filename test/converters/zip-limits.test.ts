import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ApiError } from '../../src/errors.js';
import { excelConverter } from '../../src/converters/excel.js';
import { powerpointConverter } from '../../src/converters/powerpoint.js';
import { wordConverter } from '../../src/converters/word.js';
import { checkZip, WHOLE_FILE_MAX, ZipArchive } from '../../src/converters/shared/zip-limits.js';
import type { Converter } from '../../src/converters/types.js';
import { convertWith } from '../helpers/convert-ctx.js';
import { deflated, entry, writeZip, zeroDeflate } from '../fixtures/build/zip.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-zip-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const MiB = 1024 * 1024;
const bomb = zeroDeflate(2048); // 2 GiB of zeros in about 2 MB

/** Runs fn and reports how much the resident set grew meanwhile. (How long a refusal takes is
 *  the bench's to measure: the messages below say where each one stopped.) */
async function measure(fn: () => Promise<unknown>): Promise<{ error: unknown; rssGrowth: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 5);
  let error: unknown;
  try {
    await fn();
  } catch (err) {
    error = err;
  } finally {
    clearInterval(timer);
  }
  peak = Math.max(peak, process.memoryUsage().rss);
  return { error, rssGrowth: peak - before };
}

const isInvalid = (err: unknown): boolean => err instanceof ApiError && err.code === 'invalid_document';

t.test('a 2 GiB bomb that declares its size is refused from the central directory alone', async (t) => {
  const file = writeZip(path.join(dir, 'honest-bomb.docx'), [
    entry('[Content_Types].xml', '<Types/>'),
    { name: 'word/document.xml', data: bomb, method: 8, size: 0xfffffff0 },
  ]);
  const r = await measure(() => ZipArchive.open(file));
  t.ok(isInvalid(r.error), 'invalid_document');
  t.match((r.error as Error).message, /more than 536870912 bytes|compression ratio/);
  // the message is the central directory's check: nothing was inflated
});

t.test('a 2 GiB bomb that lies about its size is stopped while inflating, at its declared size and in bounded memory', async (t) => {
  const file = writeZip(path.join(dir, 'lying-bomb.zip'), [
    entry('[Content_Types].xml', '<Types/>'),
    { name: 'word/document.xml', data: bomb, method: 8, size: 4096 },
  ]);
  const zip = await ZipArchive.open(file); // the declared sizes look harmless
  const r = await measure(() => zip.verifyAll());
  await zip.close();
  t.ok(isInvalid(r.error), 'invalid_document');
  t.match((r.error as Error).message, /word\/document\.xml inflates to more than the 4096 bytes it declares/);
  // stopped at the declared size (the message), so memory does not follow the 2 GiB
  t.ok(r.rssGrowth < 100 * MiB, `RSS grew by ${Math.round(r.rssGrowth / MiB)} MiB`);
});

t.test('an entry over 1 MiB with a compression ratio over 200:1 is refused', async (t) => {
  const file = writeZip(path.join(dir, 'ratio.zip'), [{ name: 'a.xml', data: zeroDeflate(4), method: 8, size: 4 * MiB }]);
  await t.rejects(ZipArchive.open(file), { code: 'invalid_document', message: /a\.xml has a compression ratio over 200:1/ });
  // The same ratio below 1 MiB is ordinary (XML compresses well).
  const small = writeZip(path.join(dir, 'small-ratio.zip'), [entry('b.xml', Buffer.alloc(512 * 1024))]);
  const zip = await ZipArchive.open(small);
  t.equal((await zip.read('b.xml')).length, 512 * 1024);
  await zip.close();
});

t.test('a zip of more than 10,000 entries is refused', async (t) => {
  const entries = Array.from({ length: 10_001 }, (_, i) => ({ name: `e${i}`, data: Buffer.alloc(0), method: 0 as const, size: 0 }));
  const file = writeZip(path.join(dir, 'many.zip'), entries);
  await t.rejects(ZipArchive.open(file), { code: 'invalid_document', message: /10001 entries, more than the 10000 allowed/ });
  const fine = writeZip(path.join(dir, 'fine.zip'), entries.slice(0, 10_000));
  const zip = await ZipArchive.open(fine);
  t.equal(zip.entries.length, 10_000);
  await zip.close();
});

t.test('an honest zip reads back entry for entry, names matched without case or leading slash', async (t) => {
  const file = writeZip(path.join(dir, 'ok.zip'), [entry('[Content_Types].xml', '<Types/>'), entry('Word/Document.xml', '\uFEFF<w:document>héllo</w:document>')]);
  await checkZip(file);
  const zip = await ZipArchive.open(file);
  t.equal(await zip.readText('/word/document.xml'), '<w:document>héllo</w:document>');
  t.notOk(zip.has('word/missing.xml'));
  await t.rejects(zip.read('word/missing.xml'), { code: 'invalid_document' });
  await zip.close();
});

t.test('a lying entry that declares more than one chunk is stopped while streamed, at its declared size', async (t) => {
  const file = writeZip(path.join(dir, 'lying-stream.zip'), [{ name: 'xl/worksheets/sheet1.xml', data: bomb, method: 8, size: 2 * MiB }]);
  const zip = await ZipArchive.open(file);
  let streamed = 0;
  const r = await measure(async () => { for await (const c of zip.chunks('xl/worksheets/sheet1.xml')) streamed += c.length; });
  await zip.close();
  t.ok(isInvalid(r.error), 'invalid_document');
  t.match((r.error as Error).message, /sheet1\.xml inflates to more than the 2097152 bytes it declares/);
  t.ok(streamed <= 2 * MiB, `${streamed} bytes yielded before the stop`);
});

t.test('a lying entry read whole is stopped at its declared size, as when streamed', async (t) => {
  const file = writeZip(path.join(dir, 'lying-read.zip'), [{ name: 'word/document.xml', data: bomb, method: 8, size: 4096 }]);
  const zip = await ZipArchive.open(file);
  const r = await measure(() => zip.read('word/document.xml'));
  await zip.close();
  t.ok(isInvalid(r.error), 'invalid_document');
  t.match((r.error as Error).message, /word\/document\.xml inflates to more than the 4096 bytes it declares/);
  t.ok(r.rssGrowth < 100 * MiB, `RSS grew by ${Math.round(r.rssGrowth / MiB)} MiB`);
});

t.test('a deflated entry that does not inflate is an invalid document, read whole or streamed', async (t) => {
  const good = deflated('<w:document>some text that is long enough to deflate</w:document>');
  const file = writeZip(path.join(dir, 'broken.zip'), [
    { name: 'cut.xml', data: good.subarray(0, good.length - 4), method: 8, size: 200 },
    { name: 'junk.xml', data: Buffer.from([0xff, 0xff, 0xff, 0xff]), method: 8, size: 200 },
  ]);
  const zip = await ZipArchive.open(file);
  for (const name of ['cut.xml', 'junk.xml']) {
    await t.rejects(zip.read(name), { code: 'invalid_document', message: new RegExp(`${name.replace('.', '\\.')} does not inflate`) }, `${name} read whole`);
    await t.rejects((async () => { for await (const _ of zip.chunks(name)) { /* drain */ } })(), { code: 'invalid_document' }, `${name} streamed`);
  }
  await zip.close();
});

t.test('a zip too large to hold in memory reads back the same as one held in memory', async (t) => {
  // over 1 MiB: streamed in several chunks
  const xml = `<w:document>${Array.from({ length: 30_000 }, (_, i) => `<w:p><w:r><w:t>héllo wörld ${i * 7919}</w:t></w:r></w:p>`).join('')}</w:document>`;
  const stored = Buffer.from('plain stored bytes');
  // random bytes do not compress: the filler makes the file larger than WHOLE_FILE_MAX
  const filler = Buffer.from(Array.from({ length: WHOLE_FILE_MAX + 1024 }, (_, i) => (i * 2654435761) >>> 24));
  const parts = [entry('word/document.xml', xml), { name: 'stored.bin', data: stored, method: 0 as const, size: stored.length }];
  const small = writeZip(path.join(dir, 'in-memory.zip'), parts);
  const large = writeZip(path.join(dir, 'on-disk.zip'), [...parts, { name: 'media/filler.bin', data: filler, method: 0, size: filler.length }]);
  t.ok((await import('node:fs')).statSync(large).size > WHOLE_FILE_MAX, 'the large zip is over the in-memory limit');
  for (const file of [small, large]) {
    const zip = await ZipArchive.open(file);
    t.equal(await zip.readText('word/document.xml'), xml, `${path.basename(file)}: deflated entry read whole`);
    const streamed: Uint8Array[] = [];
    for await (const c of zip.chunks('word/document.xml')) streamed.push(c);
    t.equal(Buffer.concat(streamed).toString('utf8'), xml, `${path.basename(file)}: deflated entry streamed`);
    t.ok(streamed.length > 1, `${path.basename(file)}: in ${streamed.length} chunks`);
    t.same(await zip.read('stored.bin'), stored, `${path.basename(file)}: stored entry`);
    await zip.verifyAll();
    await zip.close();
  }
});

t.test('files that are not zips, or are cut short, are invalid documents', async (t) => {
  const notZip = path.join(dir, 'not.zip');
  writeFileSync(notZip, 'just some text, no zip here');
  await t.rejects(ZipArchive.open(notZip), { code: 'invalid_document', message: /no end of central directory/ });
  const whole = writeZip(path.join(dir, 'whole.zip'), [entry('a.xml', 'x'.repeat(50_000))]);
  const bytes = (await import('node:fs')).readFileSync(whole);
  const cut = path.join(dir, 'cut.zip');
  writeFileSync(cut, Buffer.concat([bytes.subarray(0, 40), bytes.subarray(bytes.length - 22 - 46 - 5)]));
  await t.rejects(ZipArchive.open(cut).then((z) => z.verifyAll()), { code: 'invalid_document' });
});

const STOPPED_AT_DECLARED = /inflates to more than the 2048 bytes it declares/;

const converters: Array<[string, Converter, string]> = [
  ['word', wordConverter, 'word/document.xml'],
  ['excel', excelConverter, 'xl/workbook.xml'],
  ['powerpoint', powerpointConverter, 'ppt/presentation.xml'],
];
for (const [kind, conv, mainPart] of converters) {
  t.test(`the ${kind} converter refuses a lying bomb as invalid_document at its declared size, in convert and count`, async (t) => {
    const file = writeZip(path.join(dir, `bomb-${kind}.zip`), [
      entry('[Content_Types].xml', '<Types/>'),
      { name: mainPart, data: bomb, method: 8, size: 2048 },
    ]);
    const r = await measure(() => convertWith(conv, file));
    t.ok(isInvalid(r.error), `convert: ${String(r.error)}`);
    // stopped at the 2,048 bytes the entry declares, not after inflating the 2 GiB
    t.match((r.error as Error).message, STOPPED_AT_DECLARED, 'convert');
    t.ok(r.rssGrowth < 100 * MiB, `RSS grew by ${Math.round(r.rssGrowth / MiB)} MiB`);
    const c = await measure(() => conv.count(file, { formats: ['markdown'] }));
    t.ok(isInvalid(c.error), `count: ${String(c.error)}`);
    t.match((c.error as Error).message, STOPPED_AT_DECLARED, 'count');
  });
}
