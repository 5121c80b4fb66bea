// Pricing vectors for every kind and option of DESIGN.md §3, edges included.
import t from 'tap';
import { priceSource, type Fetched } from '../../src/billing/pricing.js';
import type { ConverterKind, ConvertOptions } from '../../src/types.js';

const KiB500 = 500 * 1024;
const base: ConvertOptions = { formats: ['markdown'] };

interface Vector {
  name: string;
  kind: ConverterKind;
  units: number;
  options?: Partial<ConvertOptions>;
  fetched?: Fetched;
  /** A vision model is configured (default: yes). */
  vision?: boolean;
  credits: number;
}

const count = (units: number) => ({ pages: 1, units });

const vectors: Vector[] = [
  { name: 'a 1-page PDF costs 1', kind: 'pdf', units: 1, credits: 1 },
  { name: 'a 12-page PDF costs 12', kind: 'pdf', units: 12, credits: 12 },
  { name: 'a 12-page PDF with ocr costs 3 a page', kind: 'pdf', units: 12, options: { ocr: true }, credits: 36 },
  { name: 'ocr: false adds nothing', kind: 'pdf', units: 5, options: { ocr: false }, credits: 5 },
  { name: 'quality max triples a plain PDF page', kind: 'pdf', units: 4, options: { quality: 'max' }, credits: 12 },
  { name: 'quality max triples the OCR surcharge too', kind: 'pdf', units: 4, options: { quality: 'max', ocr: true }, credits: 36 },
  { name: 'quality standard and fast cost the base price', kind: 'pdf', units: 4, options: { quality: 'fast' }, credits: 4 },
  { name: 'a PDF with 0 pages processed costs the minimum of 1', kind: 'pdf', units: 0, options: { quality: 'max', ocr: true }, credits: 1 },
  { name: 'the pages of a page range are what is counted', kind: 'pdf', units: 3, options: { pages: [{ from: 2, to: 4 }] }, credits: 3 },
  { name: 'an image costs 2 in the default ocr mode', kind: 'image', units: 1, credits: 2 },
  { name: 'an image costs 2 in explicit ocr mode', kind: 'image', units: 1, options: { image_mode: 'ocr' }, credits: 2 },
  { name: 'an image costs 5 in understand mode', kind: 'image', units: 1, options: { image_mode: 'understand' }, credits: 5 },
  { name: 'a 3-frame TIFF costs 2 per frame', kind: 'image', units: 3, credits: 6 },
  { name: 'a 3-frame TIFF understood costs 5 per frame', kind: 'image', units: 3, options: { image_mode: 'understand' }, credits: 15 },
  { name: 'an image understood without a vision model costs the OCR price', kind: 'image', units: 1, options: { image_mode: 'understand' }, vision: false, credits: 2 },
  { name: 'a 3-frame TIFF understood without a vision model costs 2 per frame', kind: 'image', units: 3, options: { image_mode: 'understand' }, vision: false, credits: 6 },
  { name: 'figures: describe adds nothing to a PDF, with a vision model', kind: 'pdf', units: 4, options: { figures: 'describe' }, credits: 4 },
  { name: 'figures: describe adds nothing to a PDF, without one', kind: 'pdf', units: 4, options: { figures: 'describe' }, vision: false, credits: 4 },
  { name: 'PDF options do not change an image price', kind: 'image', units: 1, options: { quality: 'max', ocr: true }, credits: 2 },
  { name: 'a 1-page Word document costs 1', kind: 'word', units: 1, credits: 1 },
  { name: 'exactly 10 Word pages cost 1', kind: 'word', units: 10, credits: 1 },
  { name: '11 Word pages cost 2', kind: 'word', units: 11, credits: 2 },
  { name: 'an empty Word document costs the minimum of 1', kind: 'word', units: 0, credits: 1 },
  { name: 'quality max does not change a Word price', kind: 'word', units: 25, options: { quality: 'max' }, credits: 3 },
  { name: 'exactly 10 slides cost 1', kind: 'powerpoint', units: 10, credits: 1 },
  { name: '11 slides cost 2', kind: 'powerpoint', units: 11, credits: 2 },
  { name: '0 slides cost the minimum of 1', kind: 'powerpoint', units: 0, credits: 1 },
  { name: '1 non-empty cell costs 1', kind: 'excel', units: 1, credits: 1 },
  { name: '5,000 non-empty cells cost 1', kind: 'excel', units: 5_000, credits: 1 },
  { name: '5,001 non-empty cells cost 2', kind: 'excel', units: 5_001, credits: 2 },
  { name: 'an empty sheet costs the minimum of 1', kind: 'excel', units: 0, credits: 1 },
  { name: '1 byte of HTML costs 1', kind: 'html', units: 1, credits: 1 },
  { name: 'exactly 500 KiB of HTML costs 1', kind: 'html', units: KiB500, credits: 1 },
  { name: '500 KiB + 1 byte of HTML costs 2', kind: 'html', units: KiB500 + 1, credits: 2 },
  { name: '500 KB in decimal is still within the first 500 KiB', kind: 'html', units: 500_000, credits: 1 },
  { name: 'an empty text file costs the minimum of 1', kind: 'text', units: 0, credits: 1 },
  { name: 'exactly 500 KiB of text costs 1', kind: 'text', units: KiB500, credits: 1 },
  { name: '500 KiB + 1 byte of text costs 2', kind: 'text', units: KiB500 + 1, credits: 2 },
  { name: 'three times 500 KiB of text costs 3', kind: 'text', units: 3 * KiB500, credits: 3 },
  { name: 'Markdown to HTML costs 0', kind: 'markdown-html', units: 10_000_000, credits: 0 },
  { name: 'Markdown to HTML of an empty file costs 0', kind: 'markdown-html', units: 0, credits: 0 },
  { name: 'Markdown to text costs 0', kind: 'markdown-text', units: 10_000_000, credits: 0 },
  { name: 'a URL that fetched an HTML page costs 1 + the HTML price', kind: 'url', units: 1, fetched: { kind: 'html', count: count(KiB500 + 1) }, credits: 3 },
  { name: 'a URL that fetched a 20-page PDF costs 1 + 20', kind: 'url', units: 1, fetched: { kind: 'pdf', count: count(20) }, credits: 21 },
  { name: 'a URL passes its options to the fetched PDF', kind: 'url', units: 1, options: { ocr: true, quality: 'max' }, fetched: { kind: 'pdf', count: count(2) }, credits: 19 },
  { name: 'a URL that fetched an image understood costs 1 + 5', kind: 'url', units: 1, options: { image_mode: 'understand' }, fetched: { kind: 'image', count: count(1) }, credits: 6 },
  { name: 'a URL that fetched an image understood without a vision model costs 1 + 2', kind: 'url', units: 1, options: { image_mode: 'understand' }, vision: false, fetched: { kind: 'image', count: count(1) }, credits: 3 },
  { name: 'a URL that fetched an empty text costs 1 + the minimum 1', kind: 'url', units: 0, fetched: { kind: 'text', count: count(0) }, credits: 2 },
  { name: 'a URL that fetched Markdown to render costs only the fetch', kind: 'url', units: 1, fetched: { kind: 'markdown-html', count: count(900) }, credits: 1 },
];

for (const v of vectors) {
  t.test(v.name, async (t) => {
    t.equal(priceSource(v.kind, count(v.units), { ...base, ...v.options }, { vision: v.vision ?? true, fetched: v.fetched }), v.credits);
  });
}

t.test('every converter kind has at least one vector', async (t) => {
  const kinds: ConverterKind[] = ['pdf', 'image', 'word', 'excel', 'powerpoint', 'html', 'url', 'text', 'markdown-html', 'markdown-text'];
  for (const k of kinds) t.ok(vectors.some((v) => v.kind === k), k);
});

t.test('a URL priced without what it fetched is a caller bug', async (t) => {
  t.throws(() => priceSource('url', count(1), base, { vision: true }), TypeError);
  t.throws(() => priceSource('url', count(1), base, { vision: true, fetched: { kind: 'url', count: count(1) } }), TypeError);
});

t.test('a negative or fractional unit count is refused, not priced', async (t) => {
  t.throws(() => priceSource('pdf', count(-1), base, { vision: true }), TypeError);
  t.throws(() => priceSource('text', count(1.5), base, { vision: true }), TypeError);
  t.throws(() => priceSource('excel', count(Number.NaN), base, { vision: true }), TypeError);
});
