// Heading levels of a PDF without an outline. markdown.ts decides which lines are headings;
// this decides how deep each one is. A heading has a style (its type size, and whether it is
// bold) and maybe a section number, and its level comes, first that applies, from:
// - the depth of its number ("3.4 Results" is level 2, "A.1" too, "IV." level 1);
// - the level the numbered titles of its style have in the document (learned by the statistics
//   pass from its sample of pages): "Contents" set like "1 Introduction" is level 1;
// - its place under the headings before it: one below the nearest heading in a stronger style
//   (an index's letter groups under "Index"), the level of the last one in its style.
// A level never goes more than one below the heading before it (no "###" under a "#"). The
// document's title — the strongest style of the first page's opening lines, seen on no other
// page — is level 1 and nothing nests under it; the other lines of that title block in styles
// of their own (authors, affiliations, the date) are not headings.
// Contract: one HeadingTree per document, fed every heading in reading order.
import { BOLD, MONO, type PChar } from './model.js';

export interface HeadingStyle {
  /** Type size rounded to half points. */
  size: number;
  bold: boolean;
}

/** A section number before a title: "3", "3.4", "A.1", "IV." — its depth is the level. */
const NUMBERED_RE = /^(?:(\d{1,2}(?:\.\d{1,3}){0,5})\.?|([A-Z](?:\.\d{1,3}){1,5})|([IVX]{1,5})\.)\s+\p{L}/u;

/** The depth of the section number that starts `text` (0: none). */
export function numberDepth(text: string): number {
  const m = NUMBERED_RE.exec(text);
  if (!m) return 0;
  return Math.min(6, (m[1] ?? m[2] ?? m[3] ?? '').split('.').filter(Boolean).length);
}

/**
 * True when the run reads as bold: every character of it bold, monospace ones left out when
 * there are others (typewriter faces seldom have a bold: "**2.1** `\\setkeys`" is a bold title).
 */
export function isBoldRun(chars: readonly PChar[]): boolean {
  const ink = chars.filter((c) => c.c.trim() !== '');
  const judged = ink.some((c) => (c.style & MONO) === 0) ? ink.filter((c) => (c.style & MONO) === 0) : ink;
  return judged.length > 0 && judged.every((c) => (c.style & BOLD) !== 0);
}

export const roundSize = (s: number): number => Math.round(s * 2) / 2;

export function styleOf(size: number, style: number): HeadingStyle {
  return { size: roundSize(size), bold: (style & BOLD) !== 0 };
}

export const styleKey = (s: HeadingStyle): string => `${s.size}${s.bold ? 'b' : ''}`;

/** Sizes closer than this are one size set by different fonts or rounding, in points. */
const SAME_SIZE = 0.75;

/** True when `a` reads as a higher rank than `b`: larger, or as large and bold where `b` is not. */
export function stronger(a: HeadingStyle, b: HeadingStyle): boolean {
  if (Math.abs(a.size - b.size) > SAME_SIZE) return a.size > b.size;
  return a.bold && !b.bold;
}

/** What the statistics pass learned about heading styles from its sample of pages. */
export interface StyleFacts {
  /** Level of the numbered titles of a style (styleKey), where they agree. */
  learned: Map<string, number>;
  /** Styles of heading-like lines seen on the first page and on no other sampled page. */
  firstPageOnly: Set<string>;
}

export class HeadingTree {
  private stack: Array<{ style: HeadingStyle; level: number }> = [];
  private last = 0;

  constructor(private readonly facts: StyleFacts) {}

  /** True when a line of this style on the first page's opening lines belongs to the title block. */
  inTitleBlock(style: HeadingStyle): boolean {
    return this.facts.firstPageOnly.has(styleKey(style));
  }

  /** The title of the document: level 1, with nothing nested under it. */
  title(): number {
    this.stack = [];
    this.last = 1;
    return 1;
  }

  /** The level of the next heading of the document, in reading order. */
  level(style: HeadingStyle, depth: number): number {
    let level = depth > 0 ? depth : this.facts.learned.get(styleKey(style)) ?? 0;
    if (level === 0) {
      while (this.stack.length > 0 && !stronger(this.stack[this.stack.length - 1]!.style, style)) this.stack.pop();
      level = this.stack.length > 0 ? this.stack[this.stack.length - 1]!.level + 1 : 1;
    }
    level = Math.max(1, Math.min(6, level, this.last + 1));
    while (this.stack.length > 0 && this.stack[this.stack.length - 1]!.level >= level) this.stack.pop();
    this.stack.push({ style, level });
    this.last = level;
    return level;
  }
}
