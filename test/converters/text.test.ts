// The plain-text converter: charset detection (inputs built with iconv-lite), newline and
// blank-line normalisation, and Markdown-significant characters passed through untouched.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import iconv from 'iconv-lite';
import t from 'tap';
import { textConverter } from '../../src/converters/text.js';
import { convertWith, defaultOptions } from '../helpers/convert-ctx.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-text-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
function fixture(content: string | Buffer): string {
  const file = path.join(dir, `doc-${++n}.txt`);
  writeFileSync(file, content);
  return file;
}
const convert = async (content: string | Buffer): Promise<string> => (await convertWith(textConverter, fixture(content))).markdown;

const JAPANESE = '吾輩は猫である。名前はまだ無い。\nどこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。';
const FRENCH = 'Le café était crème, la brûlée très réussie ; à côté, un garçon naïf lisait « Les Misérables » près de la fenêtre.\n'
  + 'Ça coûte 5 € — déjà payé, dit-elle, en français élégant, après l\'été.';

t.test('a Shift_JIS text without any declaration is detected and decoded', async (t) => {
  const md = await convert(iconv.encode(JAPANESE, 'Shift_JIS'));
  t.equal(md, JAPANESE);
});

t.test('a Windows-1252 text without any declaration is detected and decoded, euro sign included', async (t) => {
  const md = await convert(iconv.encode(FRENCH, 'windows-1252'));
  t.equal(md, FRENCH);
});

t.test('a UTF-16LE text with a BOM is decoded and the BOM is dropped', async (t) => {
  const text = 'Grüße aus Köln — 日本語 too.\r\nSecond line.';
  const md = await convert(Buffer.concat([Buffer.from([0xff, 0xfe]), iconv.encode(text, 'utf-16le')]));
  t.equal(md, 'Grüße aus Köln — 日本語 too.\nSecond line.');
});

t.test('a UTF-8 BOM is stripped', async (t) => {
  const md = await convert(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('# Title\n\nBody')]));
  t.equal(md, '# Title\n\nBody');
  t.notOk(md.includes('\uFEFF'));
});

t.test('CRLF and lone CR line endings become LF', async (t) => {
  const md = await convert('one\r\ntwo\rthree\nfour\r\n');
  t.equal(md, 'one\ntwo\nthree\nfour');
  t.notOk(md.includes('\r'));
});

t.test('Markdown-significant characters and hard-break spaces are left exactly as written', async (t) => {
  const text = [
    '# Heading as written',
    '*not emphasis?* _under_score_ __dunder__ 2*3*4',
    '| a | b |',
    '|---|---|',
    '| `x|y` | <div class="raw">html</div> |',
    'escaped \\* star, a <tag> & an &amp; entity, ``double`` ticks',
    'hard break follows  ',
    '    indented code line',
    '> quote',
    '1. item',
    '- [ ] task',
  ].join('\n');
  t.equal(await convert(text), text);
});

t.test('runs of blank lines collapse to one blank line, except inside fenced code', async (t) => {
  const md = await convert('first\n\n\n\n\nsecond\n   \n \t \nthird\n```\ncode\n\n\n\nmore code\n```\n\n\n\nlast\n\n\n');
  t.equal(md, 'first\n\nsecond\n\nthird\n```\ncode\n\n\n\nmore code\n```\n\nlast');
});

t.test('count prices a text file as one page of its size in bytes', async (t) => {
  const file = fixture('héllo wörld\n');
  t.same(await textConverter.count(file, defaultOptions), { pages: 1, units: Buffer.byteLength('héllo wörld\n') });
});

t.test('accepts text and UTF-16 with a BOM, refuses bytes with NULs', async (t) => {
  const peek = (bytes: Buffer) => ({ bytes, name: 'x.txt' });
  t.ok(textConverter.accepts(peek(Buffer.from('plain text'))));
  t.ok(textConverter.accepts(peek(iconv.encode(JAPANESE, 'Shift_JIS'))));
  t.ok(textConverter.accepts(peek(Buffer.concat([Buffer.from([0xff, 0xfe]), iconv.encode('abc', 'utf-16le')]))));
  t.ok(textConverter.accepts(peek(Buffer.concat([Buffer.from([0xfe, 0xff]), iconv.encode('abc', 'utf-16be')]))));
  t.notOk(textConverter.accepts(peek(iconv.encode('abc', 'utf-16le'))), 'UTF-16 without a BOM has NULs');
  t.notOk(textConverter.accepts(peek(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]))));
});

t.test('a cancelled conversion throws invalid_document', async (t) => {
  const ac = new AbortController();
  ac.abort();
  const err = await convertWith(textConverter, fixture('x'), {}, { signal: ac.signal }).catch((e: unknown) => e);
  t.match(err, { name: 'ApiError', code: 'invalid_document', message: /cancelled/ });
});
