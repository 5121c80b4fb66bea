// The price of one source in credits (DESIGN.md §3). Pure: estimate and submit both call it, with
// the Count the source's converter reported, so what is estimated is what is reserved.
//
// Decisions the table leaves open, fixed here:
// - PDF: the per-page price is (1 + 2 if ocr) and quality max multiplies that whole per-page
//   price by 3, so an OCR'd page at quality max costs (1 + 2) × 3 = 9. `count.units` is the number
//   of pages processed (the converter already applied the `pages` ranges).
// - HTML and text are priced per started 500 KiB = 512,000 bytes.
// - A priced kind never costs less than 1 credit: a source with 0 units (an empty text file, an
//   empty sheet) still costs 1. Markdown → HTML / text always costs 0.
// - URL: 1 for the fetch plus the price of the fetched document as its own kind, with the same
//   options. The fetched kind cannot itself be a URL. The service fetches at admission (estimate
//   and submit alike), so `fetched` is always what was actually fetched, never a guess.
// - Only work that runs is priced. `image_mode: understand` costs the understand price only
//   where a vision model is configured (`vision`); without one the converter writes its own
//   description beside the OCR text, priced as OCR. An image the model did not describe (it
//   failed) is charged as OCR at settle (jobs/run-job.ts). `figures: describe` costs nothing
//   extra, with or without a model.

import type { ConverterKind, ConvertOptions, Count } from '../types.js';

export const CREDITS_PER_PDF_PAGE = 1;
export const PDF_OCR_EXTRA_PER_PAGE = 2;
export const PDF_QUALITY_MAX_FACTOR = 3;
export const CREDITS_PER_IMAGE_OCR = 2;
export const CREDITS_PER_IMAGE_UNDERSTAND = 5;
export const PAGES_PER_CREDIT = 10;
export const CELLS_PER_CREDIT = 5_000;
export const BYTES_PER_CREDIT = 500 * 1024;
export const URL_FETCH_CREDITS = 1;
export const MINIMUM_CREDITS = 1;

/** What a URL source fetched: the kind it was dispatched to and that document's count. */
export interface Fetched {
  kind: ConverterKind;
  count: Count;
}

function started(units: number, perCredit: number): number {
  return Math.ceil(units / perCredit);
}

/** What runs, where the price depends on it. */
export interface PriceContext {
  /** A vision model describes images (AI_BASE_URL is configured and, at settle, it answered). */
  vision: boolean;
  /** A URL source: what it fetched. */
  fetched?: Fetched;
}

/** Credits for one source. Throws TypeError on a count that is not a non-negative integer, and
 *  for a URL without what it fetched. */
export function priceSource(kind: ConverterKind, count: Count, options: ConvertOptions, at: PriceContext): number {
  if (kind === 'markdown-html' || kind === 'markdown-text') return 0;
  if (kind === 'url') {
    const fetched = at.fetched;
    if (!fetched) throw new TypeError('a url is priced with the document it fetched');
    if (fetched.kind === 'url') throw new TypeError('a url cannot fetch a url');
    return URL_FETCH_CREDITS + priceSource(fetched.kind, fetched.count, options, { vision: at.vision });
  }
  const units = count.units;
  if (!Number.isSafeInteger(units) || units < 0) {
    throw new TypeError(`count.units must be a non-negative integer, got ${units}`);
  }
  return Math.max(MINIMUM_CREDITS, unitPrice(kind, units, options, at.vision));
}

function unitPrice(kind: Exclude<ConverterKind, 'url' | 'markdown-html' | 'markdown-text'>,
  units: number, options: ConvertOptions, vision: boolean): number {
  switch (kind) {
    case 'pdf': {
      const perPage = CREDITS_PER_PDF_PAGE + (options.ocr === true ? PDF_OCR_EXTRA_PER_PAGE : 0);
      const factor = options.quality === 'max' ? PDF_QUALITY_MAX_FACTOR : 1;
      return units * perPage * factor;
    }
    case 'image':
      return units * (options.image_mode === 'understand' && vision ? CREDITS_PER_IMAGE_UNDERSTAND : CREDITS_PER_IMAGE_OCR);
    case 'word':
    case 'powerpoint':
      return started(units, PAGES_PER_CREDIT);
    case 'excel':
      return started(units, CELLS_PER_CREDIT);
    case 'html':
    case 'text':
      return started(units, BYTES_PER_CREDIT);
  }
}
