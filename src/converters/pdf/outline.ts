// Headings from the PDF's outline (bookmarks). When a document has one, it is the author's own
// heading tree: each entry is looked for among the lines of its page (and the page before or
// after, where a destination points a little off) and the line that carries its title becomes
// a heading at the entry's depth, capped at 6. A title set over two lines is followed onto the
// second. Every entry is used once. Lines the outline does not name are not headings then.
import type * as mupdf from '../shared/mupdf.js';

export interface OutlineEntry {
  /** Letters and digits of the title, lower-cased: the form lines are compared in. */
  key: string;
  /** The same without a leading section number ("3.4", "A.1", "IV."). */
  bare: string;
  level: number;
  /** 1-based page the entry points to. */
  page: number;
  /** The title's words, lower-cased, one space apart. */
  words: string;
  used: boolean;
}

/** At most this many entries are read (a document's outline is client input). */
const MAX_ENTRIES = 5_000;

type OutlineItem = NonNullable<ReturnType<mupdf.Document['loadOutline']>>[number];

/** The words of a title, lower-cased, one space apart. */
export const wordsOf = (s: string): string => s.normalize('NFKC').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean).join(' ');
/** The key of `wordsOf`'s words: their letters and digits run together. */
const keyOfWords = (words: string): string => words.replace(/ /g, '');
export const outlineKey = (s: string): string => keyOfWords(wordsOf(s));
/** The key of a title without its leading section number. */
export const bareKey = (s: string): string => outlineKey(s.replace(/^\s*(chapter\s+|section\s+|appendix\s+)?(\d+|[A-Z]|[IVXLC]+)(\.\d+)*\.?\s+/i, ''));

/** The document's outline as a flat list in document order; empty when it has none. */
export function readOutline(doc: mupdf.Document): OutlineEntry[] {
  let items: OutlineItem[] | null = null;
  try {
    items = doc.loadOutline();
  } catch {
    return [];
  }
  const out: OutlineEntry[] = [];
  const walk = (list: readonly OutlineItem[], depth: number): void => {
    for (const it of list) {
      if (out.length >= MAX_ENTRIES) return;
      const words = wordsOf(it.title ?? '');
      const key = keyOfWords(words);
      if (key && typeof it.page === 'number' && it.page >= 0) {
        out.push({ key, bare: bareKey(it.title ?? ''), level: Math.min(6, depth), page: it.page + 1, words, used: false });
      }
      if (it.down && depth < 64) walk(it.down, depth + 1);
    }
  };
  walk(items ?? [], 1);
  return out;
}

/** What a line of a page is under the outline. */
export interface OutlineMatch {
  level: number;
  /** The line goes on with the title the line before began. */
  continued: boolean;
}

const unused = (e: OutlineEntry): boolean => !e.used;

/** Matches the lines of one page, in reading order, against the outline's entries. */
export class OutlineMatcher {
  private readonly entries: OutlineEntry[];
  private pending: { entry: OutlineEntry; text: string } | null = null;

  constructor(all: readonly OutlineEntry[], private readonly page: number) {
    this.entries = all.filter((e) => Math.abs(e.page - page) <= 1)
      .sort((a, b) => Math.abs(a.page - page) - Math.abs(b.page - page));
  }

  /** The heading level of a line with this text, 0 when the outline does not name it. */
  match(text: string): OutlineMatch {
    const pending = this.pending;
    this.pending = null;
    // most lines of most pages: nothing left to match, no key to make
    if (!pending && !this.entries.some(unused)) return { level: 0, continued: false };
    const key = outlineKey(text);
    // a title printed with or without the section number the outline gives ("3.4 Title")
    const bare = bareKey(text);
    if (!key) return { level: 0, continued: false };
    if (pending && pending.entry.key.startsWith(pending.text + key)) {
      const sofar = pending.text + key;
      if (sofar.length < pending.entry.key.length) this.pending = { entry: pending.entry, text: sofar };
      return { level: pending.entry.level, continued: true };
    }
    for (const e of this.entries) {
      if (e.used) continue;
      if (e.key === key || (bare !== '' && (e.key === bare || e.bare === bare))) { e.used = true; return { level: e.level, continued: false }; }
      // the first line of a title set over several lines
      if (key.length >= 4 && key.length >= e.key.length * 0.5 && e.key.startsWith(key)) {
        e.used = true;
        this.pending = { entry: e, text: key };
        return { level: e.level, continued: false };
      }
    }
    return { level: 0, continued: false };
  }

  /** Whether an entry of this very page is still to be found. */
  waiting(): boolean {
    return this.entries.some((e) => !e.used && e.page === this.page);
  }

  /**
   * The level of an entry whose title is a short form of the line's, on the entry's own page:
   * the line holds all the entry's words in a row (\section[aliascnt]{The aliascnt package}; an
   * outline entry "Options" for the printed "1.1.1 Options for selecting pages"). The caller asks
   * this only of a line set as a heading; 0 when no entry is.
   */
  matchShort(text: string): number {
    const words = ` ${wordsOf(text)} `;
    for (const e of this.entries) {
      if (e.used || e.page !== this.page || e.key.length < 4 || words.length > (e.words.length + 2) * 4) continue;
      // an entry with a section number names a line that starts with it ("2.2 Package" is not
      // "1.2.2 Package hyperref"); one without, any run of the line's words
      if (e.bare !== e.key ? words.startsWith(` ${e.words} `) : words.includes(` ${e.words} `)) {
        e.used = true;
        return e.level;
      }
    }
    return 0;
  }
}
