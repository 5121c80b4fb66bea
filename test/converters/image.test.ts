// The image converter on real images built by test/fixtures/build/image.ts: OCR of PNG, of a
// JPEG that only reads upright once its EXIF orientation is applied, of BMP and of each page of
// a TIFF; small type in a tall image scaled up by its line height; the understand description;
// the size guard; magic-byte sniffing.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { imageConverter } from '../../src/converters/image.js';
import { ocrScale } from '../../src/converters/image/convert.js';
import { terminateOcr } from '../../src/converters/shared/ocr.js';
import type { ConvertOptions } from '../../src/converters/types.js';
import { convertWith, makeCtx } from '../helpers/convert-ctx.js';
import * as build from '../fixtures/build/image.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-image-'));
t.teardown(async () => { await terminateOcr(); rmSync(dir, { recursive: true, force: true }); });

const png = await build.buildPng(dir);
const jpeg = await build.buildRotatedJpeg(dir);
const tiff = await build.buildTiff(dir);
const bmp = await build.buildBmp(dir);
const diagram = await build.buildDiagramPng(dir);
const gif = await build.buildGif(dir);
const smallPrint = await build.buildTallSmallPrintPng(dir);

const TEXT = 'Invoice number 4711 was paid on time. Thank you for your business.';

interface Vector { name: string; file: string; options: Partial<ConvertOptions>; has: (string | RegExp)[]; hasNot: (string | RegExp)[]; mime: string }

const vectors: Vector[] = [
  { name: 'a PNG of text is OCR’d into one paragraph', file: png, options: {}, has: [`${TEXT}\n`], hasNot: ['## Description', '<!--'], mime: 'image/png' },
  { name: 'a sideways JPEG is turned upright by its EXIF orientation before OCR', file: jpeg, options: {}, has: [TEXT], hasNot: [], mime: 'image/jpeg' },
  { name: 'a BMP (which sharp cannot read) is decoded and OCR’d', file: bmp, options: {}, has: [TEXT], hasNot: [], mime: 'image/bmp' },
  {
    // 612 × 1260 px of 12 pt type at 72 dpi: read as it is, a third of its sentences come out wrong
    name: 'small type in a tall image is scaled up by its line height and read word for word',
    file: smallPrint,
    options: {},
    has: build.SMALL_PRINT.map((s) => `${s}\n`),
    hasNot: [],
    mime: 'image/png',
  },
  {
    name: 'a two-page TIFF gives one marked section per page',
    file: tiff,
    options: {},
    has: ['<!-- page 1 -->\n\nFirst page mentions apples.\n\n<!-- page 2 -->\n\nSecond page mentions bananas.'],
    hasNot: [],
    mime: 'image/tiff',
  },
  {
    name: 'each frame of an animated GIF is a page of its own',
    file: gif,
    options: {},
    has: ['<!-- page 1 -->\n\nFirst page mentions apples.\n\n<!-- page 2 -->\n\nSecond page mentions bananas.'],
    hasNot: [],
    mime: 'image/gif',
  },
  {
    name: 'understand describes a photo’s format, camera, date and kind before its text',
    file: jpeg,
    options: { image_mode: 'understand' },
    has: [
      /^## Description\n\n- Format: JPEG, 1167 × 204 px/,
      '- Looks like: a document (mostly text on a light background)',
      '- Camera: Canon EOS 5D',
      '- Taken: 2021:05:01 12:34:56',
      /- Dominant colours: #f[0-9a-f]{5} \(\d+ %\)/,
      '- Text: 12 words recognised',
      `## Text\n\n${TEXT}`,
    ],
    hasNot: [],
    mime: 'image/jpeg',
  },
  {
    name: 'understand tells a flat-colour picture with no text from a document',
    file: diagram,
    options: { image_mode: 'understand' },
    has: ['- Format: PNG, 600 × 400 px', '- Looks like: a diagram, chart or illustration', '#d02020', '#2040c0', '- Text: none recognised'],
    hasNot: ['## Text', 'Camera'],
    mime: 'image/png',
  },
];

for (const v of vectors) {
  t.test(v.name, async (t) => {
    const res = await convertWith(imageConverter, v.file, v.options);
    for (const s of v.has) {
      if (typeof s === 'string') t.ok(res.markdown.includes(s), `has ${JSON.stringify(s)}`);
      else t.match(res.markdown, s);
    }
    for (const s of v.hasNot) {
      if (typeof s === 'string') t.notOk(res.markdown.includes(s), `has not ${JSON.stringify(s)}`);
      else t.notMatch(res.markdown, s);
    }
    t.equal(res.mime, v.mime);
    t.equal(res.variant, 'standard');
  });
}

t.test('ocrScale sizes frames by their text, within the limits', async (t) => {
  t.equal(ocrScale(612, 1260, 9), 16 / 9, 'small type in a tall frame is scaled up to 16 px lines');
  t.equal(ocrScale(1275, 584, 19), 1, 'a short frame of readable type is left alone');
  t.equal(ocrScale(2550, 3300, 40), 1, 'large type is never scaled down');
  t.equal(ocrScale(400, 300, 2), 4, 'at most 4×');
  t.equal(ocrScale(4000, 2000, 8), 1.25, 'at most MAX_OCR_SIDE a side');
  t.equal(ocrScale(8000, 4000, 20), 5000 / 8000, 'a giant frame is scaled down whatever its type');
  t.equal(ocrScale(600, 400, null), 2.5, 'a frame that is not text falls back to its height');
  t.equal(ocrScale(1500, 1200, null), 1);
});

t.test('count() gives one unit per frame and convert() one page per frame', async (t) => {
  t.same(await imageConverter.count(png, { formats: ['markdown'] }), { pages: 1, units: 1 });
  t.same(await imageConverter.count(bmp, { formats: ['markdown'] }), { pages: 1, units: 1 });
  t.same(await imageConverter.count(tiff, { formats: ['markdown'] }), { pages: 2, units: 2 });
  t.same(await imageConverter.count(gif, { formats: ['markdown'] }), { pages: 2, units: 2 });
  const ctx = makeCtx();
  t.teardown(ctx.cleanup);
  const res = await imageConverter.convert(tiff, { formats: ['markdown'] }, ctx);
  t.equal(res.pageCount, 2);
  t.same(res.pages, ['First page mentions apples.', 'Second page mentions bananas.']);
  t.same(ctx.progressCalls, [[1, 2], [2, 2]]);
});

t.test('a giant image is refused from its header, before any pixel is decoded', async (t) => {
  const giant = build.buildGiantPng(dir);
  await t.rejects(imageConverter.count(giant, { formats: ['markdown'] }), { name: 'ApiError', code: 'invalid_document', message: /40000 × 40000/ });
  await t.rejects(convertWith(imageConverter, giant), { name: 'ApiError', code: 'invalid_document', message: /40000 × 40000/ });
});

t.test('a file that is not an image is refused', async (t) => {
  const notImage = path.join(dir, 'fake.png');
  writeFileSync(notImage, 'this is text, not a picture');
  await t.rejects(convertWith(imageConverter, notImage), { name: 'ApiError', code: 'invalid_document' });
  const truncated = path.join(dir, 'truncated.png');
  writeFileSync(truncated, readFileSync(png).subarray(0, 200));
  await t.rejects(convertWith(imageConverter, truncated), { name: 'ApiError', code: 'invalid_document' });
});

t.test('accepts() checks magic bytes of every supported format', async (t) => {
  const peek = (bytes: Buffer | string) => ({ bytes: Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes, 'latin1'), name: 'x' });
  for (const file of [png, jpeg, tiff, bmp, gif]) t.ok(imageConverter.accepts(peek(readFileSync(file).subarray(0, 64))), path.basename(file));
  t.ok(imageConverter.accepts(peek('GIF89a\x01\x00\x01\x00')));
  t.ok(imageConverter.accepts(peek('RIFF\x10\x00\x00\x00WEBPVP8 ')));
  t.notOk(imageConverter.accepts(peek('%PDF-1.7')));
  t.notOk(imageConverter.accepts(peek('BM but not a bitmap header at all')));
  t.notOk(imageConverter.accepts(peek('RIFF\x10\x00\x00\x00WAVEfmt ')));
});
