// Page selections such as "1-3,5,8-" (the `pages` option of PDF conversions): parsing the
// client's string into PageRange[] and turning ranges into the page numbers of one document.
// Pages are 1-based everywhere; ranges naming pages past the end of a document are ignored
// rather than refused, because the client cannot know the page count before uploading.
import { ApiError } from '../../errors.js';
import type { PageRange } from '../types.js';

/** More ranges than any person types; bounds the work a hostile string can cause. */
const MAX_RANGES = 1000;
/** Page numbers past this are refused as garbage (no PDF has ten million pages). */
const MAX_PAGE = 10_000_000;

function pageNumber(text: string, whole: string): number {
  if (!/^\d+$/.test(text)) {
    throw new ApiError('invalid_request', `pages: "${whole}" is not a page range; use numbers and ranges such as "1-3,5,8-".`);
  }
  const n = Number(text);
  if (n < 1 || n > MAX_PAGE) {
    throw new ApiError('invalid_request', `pages: ${text} is not a page number; pages count from 1.`);
  }
  return n;
}

/** Parses "1-3,5,8-" into ranges. Spaces around parts are allowed; anything else is invalid_request. */
export function parsePageRanges(s: string): PageRange[] {
  const whole = s.trim();
  if (whole === '') throw new ApiError('invalid_request', 'pages: the page range is empty.');
  const parts = whole.split(',');
  if (parts.length > MAX_RANGES) {
    throw new ApiError('invalid_request', `pages: at most ${MAX_RANGES} ranges are allowed.`);
  }
  return parts.map((raw) => {
    const part = raw.trim();
    const dash = part.indexOf('-');
    if (dash < 0) {
      const n = pageNumber(part, whole);
      return { from: n, to: n };
    }
    const from = pageNumber(part.slice(0, dash).trim(), whole);
    const rest = part.slice(dash + 1).trim();
    if (rest === '') return { from, to: null };
    const to = pageNumber(rest, whole);
    if (to < from) {
      throw new ApiError('invalid_request', `pages: the range "${part}" ends before it starts.`);
    }
    return { from, to };
  });
}

/**
 * The 1-based page numbers that `ranges` select in a document of `pageCount` pages, ascending and
 * without duplicates. `undefined` selects every page; pages past the end are ignored.
 */
export function selectPages(ranges: PageRange[] | undefined, pageCount: number): number[] {
  const count = Math.max(0, Math.floor(pageCount));
  if (ranges === undefined) return Array.from({ length: count }, (_, i) => i + 1);
  const chosen = new Uint8Array(count + 1);
  for (const r of ranges) {
    const from = Math.max(1, r.from);
    const to = Math.min(count, r.to ?? count);
    for (let p = from; p <= to; p++) chosen[p] = 1;
  }
  const out: number[] = [];
  for (let p = 1; p <= count; p++) if (chosen[p]) out.push(p);
  return out;
}
