// The plain-data shapes the PDF pipeline passes between its steps, and the small text tests
// several steps share (list markers, page numbers). Coordinates are PDF points with the origin
// at the top-left of the page, y growing downwards.

export interface Box { x0: number; y0: number; x1: number; y1: number }

export const BOLD = 1;
export const ITALIC = 2;
export const MONO = 4;
/** A glyph of a symbol font (Symbol, Wingdings): only while a page is read. */
export const SYMBOL = 8;
/** A glyph of a math font (TeX's cmex, cmsy…, OpenType math fonts): only while a page is read. */
export const MATH = 16;

export interface PChar {
  c: string;
  x0: number;
  x1: number;
  /** Baseline y. */
  base: number;
  size: number;
  /** BOLD | ITALIC | MONO. */
  style: number;
  /** Index into PageModel.links, or -1. */
  link: number;
}

/** Characters on one baseline with no gap wider than an em between them. */
export interface Frag extends Box {
  chars: PChar[];
  /** The size most of its characters have. */
  size: number;
  base: number;
}

/** A finished piece of page content placed in reading order by the layout step. */
export type Item =
  | (Box & { kind: 'text'; frag: Frag })
  | (Box & { kind: 'table'; markdown: string })
  | (Box & { kind: 'figure'; index: number });

export function textOf(chars: readonly PChar[]): string {
  let s = '';
  for (const ch of chars) s += ch.c;
  return s;
}

export function boxOf(items: readonly Box[]): Box {
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const b of items) {
    x0 = Math.min(x0, b.x0); y0 = Math.min(y0, b.y0);
    x1 = Math.max(x1, b.x1); y1 = Math.max(y1, b.y1);
  }
  return { x0, y0, x1, y1 };
}

const RTL_RE = /[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]/u;
const LETTER_RE = /\p{L}/u;

/** True when most letters of `runs` (one run of characters, or several read as one) are of a
 *  right-to-left script (Hebrew, Arabic, Persian). */
export function mostlyRtl(...runs: ReadonlyArray<readonly PChar[]>): boolean {
  let rtl = 0, letters = 0;
  for (const chars of runs) {
    for (const ch of chars) {
      if (!isLetter(ch.c)) continue;
      letters++;
      if (ch.c.charCodeAt(0) >= 0x80 && RTL_RE.test(ch.c)) rtl++;
    }
  }
  return rtl > letters / 2;
}

/** True for a letter (any script); ASCII without a regular expression. */
export function isLetter(c: string): boolean {
  const code = c.charCodeAt(0);
  if (code < 0x80) return (code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a;
  return LETTER_RE.test(c);
}

const WORD_CHAR_RE = /[\p{L}\p{N}]/u;

/** True for a letter or a digit (any script); ASCII without a regular expression. */
export function isWordChar(c: string): boolean {
  const code = c.charCodeAt(0);
  if (code < 0x80) return (code >= 0x30 && code <= 0x39) || ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a);
  return WORD_CHAR_RE.test(c);
}

/** True for a character that is not white space (what `c.trim() !== ''` says), printable ASCII
 *  without a call. */
export function isInk(c: string): boolean {
  const code = c.charCodeAt(0);
  if (code > 0x20 && code < 0x7f) return true;
  return c.trim() !== '';
}

/** True for a character that reads left to right inside right-to-left text: a Latin letter or
 *  a digit. */
export const isLtrChar = (c: string): boolean => /[\p{L}\p{N}]/u.test(c) && !RTL_RE.test(c);

export const BULLET_RE = /^([•◦▪▫●○■□‣⁃∙·\-–—*»►✓✔])\s+/u;
export const ORDERED_RE = /^\(?(\d{1,3})[.)]\s+/;

/** True when `chars` hold only a list marker ("•", "3.", "(2)"), so a gap after it is not a column gap. */
export function isMarkerText(chars: readonly PChar[]): boolean {
  const t = textOf(chars).trim();
  return t.length > 0 && t.length <= 4 && (/^[•◦▪▫●○■□‣⁃∙·\-–—*»►✓✔]$/u.test(t) || /^\(?\d{1,3}[.)]$/.test(t));
}

/** Text that is nothing but a page number: "7", "- 7 -", "Page 7", "7 of 20", "vii". */
export function isPageNumber(text: string): boolean {
  const t = text.trim().toLowerCase();
  return /^[-–—(\s]*(page\s+)?\d{1,5}(\s*(of|\/)\s*\d{1,5})?[-–—)\s]*$/.test(t) || /^[ivxlc]{1,7}$/.test(t);
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  // most calls get one value many times (the size of a line's letters): no sort for those
  const first = values[0]!;
  let same = true;
  for (let i = 1; i < values.length && same; i++) same = values[i] === first;
  if (same) return first;
  const s = Float64Array.from(values).sort();
  return s[s.length >> 1]!;
}

// Comparators made once, at module level. A comparator (or other callback a builtin calls)
// written inline is a new closure on every call of the function that holds it, and V8 keeps
// the optimised code of such closures only while one of them lives: after each full garbage
// collection the next closure is compiled again (--trace-opt: about 200 TurboFan compiles per
// pass over scenario B's manuals, long after the first pass).

/** Left to right by left edge. */
export const byX0 = (a: { x0: number }, b: { x0: number }): number => a.x0 - b.x0;
/** Top to bottom by baseline, then left to right. */
export const byBaseThenX0 = (a: { base: number; x0: number }, b: { base: number; x0: number }): number => a.base - b.base || a.x0 - b.x0;
/** Top to bottom by top edge, then left to right. */
export const byY0ThenX0 = (a: Box, b: Box): number => a.y0 - b.y0 || a.x0 - b.x0;
/** A character that is not white space. */
export const isInkChar = (c: PChar): boolean => isInk(c.c);
