// Document-wide statistics the page-by-page pass needs: the body text size (the size most
// characters have), the larger sizes that make headings and what the heading styles' numbered
// titles say of their levels (see headings.ts), and the running headers/footers
// (text repeated at the same height in the top or bottom margin of most pages). They are taken
// from a sample of pages spread over the document, so a 2,000-page PDF costs at most
// SAMPLE_PAGES extra text extractions; no page's content is kept in memory, but for the sampled
// pages a standard conversion reads anyway (convert.ts keeps those and reads them once).
import type { PageModel } from './extract.js';
import { HeadingTree, type HeadingStyle, isBoldRun, numberDepth, roundSize, styleKey } from './headings.js';
import { BOLD, byBaseThenX0, type Frag, isInk, isPageNumber, type PChar, textOf } from './model.js';

export const SAMPLE_PAGES = 40;
/** Share of the page height at the top and at the bottom where running heads live. */
const MARGIN = 0.09;
/** Vertical position granularity of a running head, in points. */
const Y_STEP = 6;

/** At most this many distinct words are kept for the hyphenation evidence. */
const MAX_WORDS = 200_000;
const WORD_RE = /\p{L}+(?:-\p{L}+)*/gu;

export interface PageSignals {
  /** Words of the page, lower-cased (a line's first word and a word cut by a line-end hyphen
   *  left out: they may be pieces of a word). */
  words: Set<string>;
  /** Ink characters per rounded size (page numbers left out). */
  sizeChars: Map<number, number>;
  /** Keys of the fragments in the margins (text with digits folded, and height). */
  marginKeys: Set<string>;
  /** 1-based page number. */
  page: number;
  /** Style and section-number depth of the page's short lines (heading candidates). */
  shortLines: Array<{ style: HeadingStyle; depth: number }>;
}

export interface DocStats {
  bodySize: number;
  /** Sizes that make # / ## / ### headings, largest first (at most 3 levels are used). */
  headingSizes: number[];
  /** Margin keys seen on most sampled pages. */
  running: Set<string>;
  /** Words seen in the sampled pages (PageSignals.words): evidence for line-end hyphens. */
  words: Set<string>;
  /** Heading levels of the document, in reading order (see headings.ts). */
  tree: HeadingTree;
}

/** The page numbers (1-based) to sample: all of them when few, else evenly spread. */
export function samplePages(pageCount: number): number[] {
  if (pageCount <= SAMPLE_PAGES) return Array.from({ length: pageCount }, (_, i) => i + 1);
  const out = new Set<number>();
  for (let i = 0; i < SAMPLE_PAGES; i++) out.add(1 + Math.round((i * (pageCount - 1)) / (SAMPLE_PAGES - 1)));
  return [...out];
}

const normText = (t: string): string => t.toLowerCase().replace(/\d+/g, '#').replace(/\s+/g, ' ').trim();

function inMargin(f: Frag, height: number): boolean {
  const yc = (f.y0 + f.y1) / 2;
  return yc < height * MARGIN || yc > height * (1 - MARGIN);
}

function keyOf(f: Frag, yBucket: number): string {
  return `${yBucket}|${normText(textOf(f.chars))}`;
}

/** Adds `n` characters of `size` to the counts by rounded size. */
function countSize(sizeChars: Map<number, number>, size: number, n: number): void {
  if (n === 0) return;
  const k = roundSize(size);
  sizeChars.set(k, (sizeChars.get(k) ?? 0) + n);
}

export function pageSignals(page: PageModel): PageSignals {
  const sizeChars = new Map<number, number>();
  const marginKeys = new Set<string>();
  const words = new Set<string>();
  for (const f of page.frags) {
    const text = textOf(f.chars);
    // where a hyphen that ends the line stands
    const lineEndHyphen = text.trimEnd().length - 1;
    let first = true;
    for (const m of text.matchAll(WORD_RE)) {
      const end = m.index + m[0].length;
      const cut = end === lineEndHyphen && text[end] === '-';
      if (!first && !cut) words.add(m[0].toLowerCase());
      first = false;
    }
    if (inMargin(f, page.height)) {
      if (isPageNumber(text)) continue;
      marginKeys.add(keyOf(f, Math.round(((f.y0 + f.y1) / 2) / Y_STEP)));
    }
    // The characters of a fragment mostly share one size: counted by runs.
    let size = NaN;
    let n = 0;
    for (const ch of f.chars) {
      if (!isInk(ch.c)) continue;
      if (ch.size === size) { n++; continue; }
      countSize(sizeChars, size, n);
      size = ch.size;
      n = 1;
    }
    countSize(sizeChars, size, n);
  }
  return { words, sizeChars, marginKeys, page: page.number, shortLines: shortLines(page) };
}

/** The page's lines of at most a dozen words outside the margins, with their style. */
function shortLines(page: PageModel): PageSignals['shortLines'] {
  const frags = page.frags.filter((f) => !inMargin(f, page.height)).sort(byBaseThenX0);
  const out: PageSignals['shortLines'] = [];
  let run: Frag[] = [];
  for (const f of frags) {
    const last = run[run.length - 1];
    // a wide gap on the baseline is another column's line
    if (last && (Math.abs(f.base - last.base) > Math.min(f.size, last.size) * 0.35 || f.x0 - last.x1 > f.size * 2)) {
      addShortLine(run, out);
      run = [];
    }
    run.push(f);
  }
  addShortLine(run, out);
  return out;
}

/** The line `run` makes, added to `out` when it is short. */
function addShortLine(run: readonly Frag[], out: PageSignals['shortLines']): void {
  if (run.length === 0) return;
  const chars: PChar[] = [];
  let size = 0;
  for (const f of run) {
    for (const c of f.chars) chars.push(c);
    chars.push({ ...f.chars[f.chars.length - 1]!, c: ' ' });
    size = Math.max(size, f.size);
  }
  const text = textOf(chars).trim();
  if (text.length <= 80 && text.split(/\s+/).length <= 12 && /\p{L}/u.test(text)) {
    out.push({ style: { size: roundSize(size), bold: isBoldRun(chars) }, depth: numberDepth(text) });
  }
}

export function buildStats(signals: readonly PageSignals[]): DocStats {
  const sizes = new Map<number, number>();
  const keyPages = new Map<string, number>();
  const words = new Set<string>();
  for (const s of signals) {
    for (const w of s.words) if (words.size < MAX_WORDS) words.add(w);
    for (const [k, n] of s.sizeChars) sizes.set(k, (sizes.get(k) ?? 0) + n);
    for (const k of s.marginKeys) keyPages.set(k, (keyPages.get(k) ?? 0) + 1);
  }
  let bodySize = 10;
  let best = -1;
  for (const [k, n] of sizes) if (n > best) { best = n; bodySize = k; }
  const larger = [...sizes.keys()].filter((k) => k >= bodySize * 1.12 && k >= bodySize + 1).sort((a, b) => b - a);
  const headingSizes: number[] = [];
  for (const k of larger) {
    const last = headingSizes[headingSizes.length - 1];
    if (last === undefined || last - k > 0.75) headingSizes.push(k);
  }
  const need = Math.max(2, Math.ceil(signals.length * 0.4));
  const running = new Set<string>();
  for (const [k, n] of keyPages) if (n >= need) running.add(k);
  const sized = { bodySize, headingSizes };
  return { ...sized, running, words, tree: new HeadingTree(styleFacts(signals, sized)) };
}

/**
 * What the sample says about the styles of heading-like lines: the level numbered titles give
 * a style (the commonest depth, where at least a third of its lines are numbered and most of
 * those agree), and the styles seen on the first page only (with three or more pages sampled).
 */
function styleFacts(signals: readonly PageSignals[], sized: Pick<DocStats, 'bodySize' | 'headingSizes'>): ConstructorParameters<typeof HeadingTree>[0] {
  const seen = new Map<string, { style: HeadingStyle; lines: number; pages: Set<number>; depths: number[] }>();
  for (const s of signals) {
    for (const l of s.shortLines) {
      if (headingLevel(sized, l.style.size, l.style.bold ? BOLD : 0) === 0) continue;
      const k = styleKey(l.style);
      const e = seen.get(k) ?? { style: l.style, lines: 0, pages: new Set(), depths: [] };
      e.lines++;
      e.pages.add(s.page);
      if (l.depth > 0) e.depths.push(l.depth);
      seen.set(k, e);
    }
  }
  const learned = new Map<string, number>();
  const firstPageOnly = new Set<string>();
  const firstSampled = signals.length >= 3 && signals[0]!.page === 1;
  for (const [k, e] of seen) {
    if (e.depths.length > 0 && e.depths.length * 3 >= e.lines) {
      const counts = new Map<number, number>();
      for (const d of e.depths) counts.set(d, (counts.get(d) ?? 0) + 1);
      const [depth, n] = [...counts].sort((a, b) => b[1] - a[1])[0]!;
      if (n >= e.depths.length * 0.6) learned.set(k, depth);
    }
    if (firstSampled && e.pages.size === 1 && e.pages.has(1)) firstPageOnly.add(k);
  }
  return { learned, firstPageOnly };
}

/** True for a running header/footer or a bare page number in the margins. */
export function isRunningHead(stats: DocStats | null, f: Frag, pageHeight: number): boolean {
  if (!inMargin(f, pageHeight)) return false;
  if (isPageNumber(textOf(f.chars))) return true;
  if (!stats) return false;
  const b = Math.round(((f.y0 + f.y1) / 2) / Y_STEP);
  return stats.running.has(keyOf(f, b)) || stats.running.has(keyOf(f, b - 1)) || stats.running.has(keyOf(f, b + 1));
}

/**
 * The page's fragments without its running heads and page numbers. A bare number in the top
 * margin that the text of a kept fragment follows on its baseline is a section number
 * ("1  Documentation" set at the top of a page), not a page number: it stays.
 */
export function withoutRunningHeads(stats: DocStats | null, frags: readonly Frag[], pageHeight: number): Frag[] {
  const dropped = new Set(frags.filter((f) => isRunningHead(stats, f, pageHeight)));
  if (dropped.size === 0) return [...frags];
  // a page with more than a few bare numbers in its margins is no page of titles
  const numbers = [...dropped].filter((f) => isPageNumber(textOf(f.chars)));
  const kept = new Set(numbers.length > 8 ? [] : numbers.filter((f) => frags.some((g) =>
    !dropped.has(g) && Math.abs(g.base - f.base) <= f.size * 0.35 && g.x0 >= f.x1 && g.x0 - f.x1 <= f.size * 3)));
  return frags.filter((f) => !dropped.has(f) || kept.has(f));
}

/**
 * The heading level a line of this size and style would have: 1–3, or 0 for body text.
 * Larger sizes map to levels by rank; a bold line at body size is one level below the
 * smallest larger size. Whether a candidate really is a heading (short, standalone) is
 * decided by the caller, which sees the whole paragraph.
 */
export function headingLevel(stats: Pick<DocStats, 'bodySize' | 'headingSizes'>, size: number, style: number): number {
  const k = roundSize(size);
  if (k >= stats.bodySize * 1.12 && k >= stats.bodySize + 1) {
    let idx = stats.headingSizes.findIndex((h) => k >= h - 0.75);
    if (idx < 0) idx = stats.headingSizes.length;
    return Math.min(3, idx + 1);
  }
  if ((style & BOLD) !== 0 && Math.abs(k - stats.bodySize) <= 1) return Math.min(3, stats.headingSizes.length + 1);
  return 0;
}
