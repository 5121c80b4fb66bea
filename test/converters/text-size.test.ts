// The text size estimate that sizes images for OCR, on rasters of real type (pdfkit + mupdf) at
// several sizes, dark on light and light on dark, and on rasters that hold no lines of text.
import sharp from 'sharp';
import t from 'tap';
import { estimateLineHeight } from '../../src/converters/shared/text-size.js';
import { smallPrintPng } from '../fixtures/build/image.js';

interface Raster { data: Buffer; width: number; height: number }

async function grey(png: Buffer | Promise<Buffer>): Promise<Raster> {
  const { data, info } = await sharp(await png).greyscale().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

const estimate = (r: Raster): number | null => estimateLineHeight(r.data, r.width, r.height);

t.test('12 pt type at 60 to 300 dpi: the estimate grows with it, about 0.75 of the em', async (t) => {
  let last = 0;
  for (const dpi of [60, 72, 100, 150, 300]) {
    const em = (12 * dpi) / 72;
    const got = estimate(await grey(smallPrintPng(dpi)));
    t.ok(got !== null && got > last, `${dpi} dpi: ${got} px, more than ${last}`);
    t.ok(got !== null && got >= 0.6 * em && got <= 0.9 * em, `${dpi} dpi: ${got} px for a ${em.toFixed(1)} px em`);
    last = got ?? Infinity;
  }
});

t.test('the estimate tells 72 dpi type (unreadable) from 150 dpi type (fine) on either side of 16 px', async (t) => {
  t.ok(estimate(await grey(smallPrintPng(72)))! < 12);
  t.ok(estimate(await grey(smallPrintPng(150)))! > 16);
});

t.test('a tall raster with the same type and much blank space gives the same estimate', async (t) => {
  const compact = estimate(await grey(smallPrintPng(72)));
  const tall = estimate(await grey(smallPrintPng(72, { height: 1260, gap: 4 })));
  t.equal(tall, compact);
});

t.test('light type on a dark background is measured like dark on light', async (t) => {
  const dark = await grey(smallPrintPng(100));
  const light = { ...dark, data: Buffer.from(dark.data.map((v) => 255 - v)) };
  const a = estimate(dark), b = estimate(light);
  t.ok(a !== null && b !== null && Math.abs(a - b) <= 1, `${a} and ${b}`);
});

t.test('rasters without lines of text give no estimate', async (t) => {
  const width = 600, height = 400;
  t.equal(estimate({ data: Buffer.alloc(width * height, 255), width, height }), null, 'blank');
  // a photo-like picture: smooth random blobs of every size
  let x = 12345;
  const noise = Buffer.alloc((width / 8) * (height / 8));
  for (let i = 0; i < noise.length; i++) { x = (x * 1103515245 + 12345) % 2147483648; noise[i] = x >> 23; }
  const blobs = await grey(sharp(noise, { raw: { width: width / 8, height: height / 8, channels: 1 } })
    .resize(width, height, { kernel: 'cubic' }).blur(4).png().toBuffer());
  t.equal(estimate(blobs), null, 'blobs');
  // a flat chart: two blocks of colour
  const chart = Buffer.alloc(width * height, 255);
  for (let y = 50; y < 350; y++) chart.fill(40, y * width + 50, y * width + 250);
  for (let y = 200; y < 350; y++) chart.fill(90, y * width + 330, y * width + 530);
  t.equal(estimate({ data: chart, width, height }), null, 'chart');
  t.equal(estimate({ data: Buffer.alloc(0), width: 0, height: 0 }), null, 'empty');
});
