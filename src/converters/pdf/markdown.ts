// Markdown blocks from one page's sections in reading order: fragments on one baseline become
// a line; lines become headings (by the document's size statistics), list items (bullets and
// numbers, nested by indent), code blocks (all-monospace lines) or paragraphs, re-joined
// across line breaks with split words mended. Tables and figures arrive ready-made.
// With `structure` off (quality fast) every text block is a plain paragraph.
import { type HeadingStyle, isBoldRun, numberDepth, roundSize, stronger, styleKey } from './headings.js';
import { escapeBlockStart, inlineMarkdown } from './inline.js';
import {
  BOLD, type Box, BULLET_RE, boxOf, byX0, isInk, isLetter, isWordChar, ITALIC, type Item, median, MONO, mostlyRtl, ORDERED_RE, type PChar, textOf,
} from './model.js';
import type { OutlineMatcher } from './outline.js';
import { type DocStats, headingLevel } from './stats.js';
import { FORM_FIELD_RE } from '../shared/form-field.js';

export interface RenderOptions {
  stats: DocStats | null;
  /** The document's outline on this page: when set, headings are the lines it names. */
  outline?: OutlineMatcher | null;
  /** The page is the document's first (where its title block is). */
  firstPage?: boolean;
  structure: boolean;
  links: readonly string[];
  figure(index: number): string;
}

interface Line {
  chars: PChar[]; x0: number; x1: number; y0: number; y1: number; size: number; text: string;
  style: number;
  /** Every character is monospace (style has MONO when most are). */
  allMono: boolean;
  /** Size and weight as a heading (bold when all but its monospace characters are). */
  head: HeadingStyle;
}

type Block =
  | { kind: 'para' | 'code'; lines: Line[]; level?: number }
  | { kind: 'heading'; level: number; lines: Line[]; byOutline?: boolean; depth: number }
  | { kind: 'item'; ordered: number | null; indent: number; lines: Line[] }
  | { kind: 'raw'; markdown: string };

const SPACE = (like: PChar): PChar => ({ c: ' ', x0: like.x1, x1: like.x1, base: like.base, size: like.size, style: like.style, link: like.link });

/** A plain character set in place of dot leaders, where `like` stands. */
const leaderChar = (like: PChar, c: string): PChar => ({ ...like, c, style: 0, link: -1 });

/**
 * Replaces dot leaders (". . . . ." in a table of contents) by one plain "…", in place; leaders
 * that end the line (their page number set apart, in a column of its own) end it in " …".
 */
function collapseLeaders(chars: PChar[]): void {
  for (let i = 0; i < chars.length; i++) {
    if (chars[i]!.c !== '.') continue;
    let j = i, dots = 0;
    while (j < chars.length && (chars[j]!.c === '.' || chars[j]!.c === ' ')) { if (chars[j]!.c === '.') dots++; j++; }
    const last = j === chars.length;
    if (dots >= 4 && (!last || i > 0)) {
      const like = chars[i]!;
      chars.splice(i, j - i, leaderChar(like, ' '), leaderChar(like, '…'), ...(last ? [] : [leaderChar(like, ' ')]));
      i += 2;
    } else {
      i = j;
    }
  }
}

/** True when most letters of the row are of a right-to-left script (Hebrew, Arabic, Persian). */
const isRtlLine = (row: ReadonlyArray<Item & { kind: 'text' }>): boolean => mostlyRtl(...row.map(charsOfItem));
const charsOfItem = (it: Item & { kind: 'text' }): PChar[] => it.frag.chars;
/** Text items right to left by their right edge. */
const byX1Descending = (a: Box, b: Box): number => b.x1 - a.x1;
const isWordPChar = (c: PChar): boolean => isWordChar(c.c);

/** Merges the section's text items that share a baseline into lines, keeping other items. */
function linesOf(section: readonly Item[]): Array<Line | Item> {
  const out: Array<Line | Item> = [];
  let row: Array<Item & { kind: 'text' }> = [];
  for (const it of section) {
    if (it.kind !== 'text') {
      if (row.length > 0) out.push(lineOf(row));
      row = [];
      out.push(it);
      continue;
    }
    const first = row[0];
    if (first && Math.abs(it.frag.base - first.frag.base) > Math.min(it.frag.size, first.frag.size) * 0.35) {
      out.push(lineOf(row));
      row = [];
    }
    row.push(it);
  }
  if (row.length > 0) out.push(lineOf(row));
  return out;
}

/** One line from the text items of a baseline (sorted here, in reading order). */
function lineOf(row: Array<Item & { kind: 'text' }>): Line {
  // a line of right-to-left script is read from its right end
  const rtl = isRtlLine(row);
  row.sort(rtl ? byX1Descending : byX0);
  const chars: PChar[] = [];
  let prev: Item | null = null;
  for (const it of row) {
    const gap = prev === null ? 0 : rtl ? prev.x0 - it.x1 : it.x0 - prev.x1;
    // pieces that touch (a full stop the PDF set apart) join without a space
    if (chars.length > 0 && gap > it.frag.size * 0.1) chars.push(SPACE(chars[chars.length - 1]!));
    for (const c of it.frag.chars) if (c.c !== '\u00ad') chars.push(c);
    prev = it;
  }
  collapseLeaders(chars);
  unknownBullet(chars);
  superscriptMarkers(chars);
  const ink: PChar[] = [];
  // bold/italic must hold for every character; a code line may contain a few glyphs the
  // PDF drew from a fallback font, so monospace needs only most of them
  let style = BOLD | ITALIC;
  let monoCount = 0;
  for (const c of chars) {
    if (!isInk(c.c)) continue;
    ink.push(c);
    style &= c.style;
    if (c.style & MONO) monoCount++;
  }
  if (monoCount >= ink.length * 0.8) style |= MONO;
  // the line's size is that of its words: a large "!!" in the margin or a big bullet set on
  // the line of a paragraph does not make it a title
  let size = 0;
  let wordedSize = -1;
  for (const r of row) {
    size = Math.max(size, r.frag.size);
    if (r.frag.size > wordedSize && r.frag.chars.some(isWordPChar)) wordedSize = r.frag.size;
  }
  if (wordedSize >= 0) size = wordedSize;
  const box = boxOf(row);
  return {
    chars, size, style, allMono: monoCount === ink.length, text: textOf(chars).trim(),
    head: { size: roundSize(size), bold: isBoldRun(ink) },
    x0: box.x0, x1: box.x1, y0: box.y0, y1: box.y1,
  };
}

/**
 * A glyph the PDF gives no Unicode for (U+FFFD) or a private-use one (U+F0xx, a symbol font
 * extract.ts did not recognise by name), alone at the start of a line before a gap, is a list
 * bullet: it becomes "•", which the list rules know.
 */
function unknownBullet(chars: PChar[]): void {
  const i = chars.findIndex((c) => c.c.trim() !== '');
  const first = chars[i];
  if (!first || !/^[\uf000-\uf0ff\ufffd]$/u.test(first.c)) return;
  const next = chars[i + 1];
  if (!next || (next.c !== ' ' && next.x0 - first.x1 < first.size * 0.2)) return;
  chars[i] = { ...first, c: '•' };
  if (next.c !== ' ') chars.splice(i + 1, 0, SPACE(chars[i]!));
}

const SUPERSCRIPT: Record<string, string> = { 0: '⁰', 1: '¹', 2: '²', 3: '³', 4: '⁴', 5: '⁵', 6: '⁶', 7: '⁷', 8: '⁸', 9: '⁹' };

/**
 * Footnote markers: digits set smaller than the line's letters and above their baseline become
 * superscript digits, so they read "word³" and "³We refer to", never "word3" / "3We refer to".
 */
function superscriptMarkers(chars: PChar[]): void {
  // most lines have no digit: nothing to look at
  if (!chars.some((c) => isDigit(c.c))) return;
  const sizes: number[] = [];
  const bases: number[] = [];
  for (const c of chars) {
    if (!isLetter(c.c)) continue;
    sizes.push(c.size);
    bases.push(c.base);
  }
  if (sizes.length === 0) return;
  const size = median(sizes);
  const base = median(bases);
  for (const [i, ch] of chars.entries()) {
    if (!isDigit(ch.c) || ch.size > size * 0.8 || base - ch.base < size * 0.2) continue;
    chars[i] = { ...ch, c: SUPERSCRIPT[ch.c]! };
  }
}

/** One ASCII digit (what /^\d$/ matches). */
const isDigit = (c: string): boolean => c.length === 1 && c >= '0' && c <= '9';

const isLine = (x: Line | Item): x is Line => !('kind' in x);
const endsSentence = (s: string): boolean => /[.!?:;"”’)]$/.test(s);
/** A table-of-contents line: dot leaders before a page number. */
const LEADERS_RE = /(\.\s?){4,}[^.]{0,3}\s*\S*\d+$| … \S*\d+$| …$/;

const CAPTION_RE = /^(table|figure|fig\.|chart|exhibit|plate|listing|source|note)s?\s*[\dIVX]+[a-z]?(\.\d+)?\s*[.:—–-]?(\s|$)/i;

const CHAPTER_RE = /^(chapter|part|appendix)\s+(\d{1,3}|[IVXLC]{1,6}|[A-Z])$/i;

/** The labels of a figure's panels on one line: "(a) before (b) after", "(c) … (d) …". */
const PANELS_RE = /^\([a-z]\)\s.*\s\([a-z]\)\s/;

/**
 * Whether a line is a heading: its provisional level (the final one is the HeadingTree's), 0
 * for text. Candidates come from the document's font statistics (larger type, or bold at body
 * size); a numbered title takes the depth of its number. Not headings: sentences, form fields,
 * and short bold labels at body size that are neither numbered nor set apart by space above
 * (`spaced`). Set like body text, a numbered line centred in its column is a title too.
 * `inColumn`: the section is one column of several.
 */
function levelOf(line: Line, stats: DocStats | null, spaced: boolean, centred: boolean, inColumn: boolean): number {
  if (!stats) return 0;
  let level = headingLevel(stats, line.size, line.head.bold ? BOLD : 0);
  if (level === 0 && centred && spaced && Math.abs(line.size - stats.bodySize) <= 1) level = numberDepth(line.text);
  if (level === 0) return 0;
  // bold but for its monospace words ("2.1 `\\setkeys`"): a title only where set apart
  if (line.head.bold && (line.style & BOLD) === 0 && !spaced) return 0;
  const bySize = line.size >= stats.bodySize * 1.12;
  const words = line.text.split(/\s+/).length;
  const depth = numberDepth(line.text);
  // a bold line at body size is a heading only when it is short and not a sentence
  if (!bySize && (line.text.length > 80 || /[.,;:]$/.test(line.text) || words > 12)) return 0;
  if (!bySize && depth === 0 && !spaced) return 0;
  // a one-word bold label at body size ("Note", "Warning", "Abstract") is emphasis, even set
  // apart; a lone capital, or a word centred over one of several columns, is an index's
  // letter group ("Symbols")
  if (!bySize && depth === 0 && words < 2 && !/^\p{Lu}$/u.test(line.text) && !(centred && inColumn)) return 0;
  // a caption ("Table 1: …", "Figure 3.") is not a title
  // nor are the labels of a figure's panels ("(a) before (b) after")
  if (CAPTION_RE.test(line.text) || PANELS_RE.test(line.text)) return 0;
  // larger type that reads as a sentence (several words and a full stop) is text set large;
  // a form field ("Patient Name: …") is a label with its value
  if (/[a-z)]\.$/.test(line.text) && words > 5) return 0;
  if (FORM_FIELD_RE.test(line.text)) return 0;
  // a contents line (a title, then its page number far to the right; "B Further Reading 14")
  // or a date is not a section title
  if (pageNumberAfterGap(line) || (/^[A-Z]\s+\p{Lu}/u.test(line.text) && /\s\d{1,4}$/.test(line.text))) return 0;
  if (DATE_RE.test(line.text)) return 0;
  if (!/\p{L}/u.test(line.text)) return 0;
  // nor is a line that opens a list item ("• Expansion of macros" set large on a slide)
  if (BULLET_RE.test(line.text)) return 0;
  return depth > 0 ? depth : level;
}

/** True when the line ends in a number set well apart from the text before it ("Index    20"). */
function pageNumberAfterGap(line: Line): boolean {
  const m = /\s(\d{1,4}|[ivxlc]{1,6})$/.exec(line.text);
  if (!m) return false;
  const ink = line.chars.filter((c) => c.c.trim() !== '');
  const first = ink.length - m[1]!.length;
  if (first < 1) return false;
  return ink[first]!.x0 - ink[first - 1]!.x1 >= line.size * 1.5;
}

const DATE_RE = /^(\p{L}+ \d{1,2}, \d{4}|\d{1,2} \p{L}+ \d{4}|\p{L}+ \d{4})$/u;

/**
 * True when all the line's ink is a link to a page of this document: an entry of a table of
 * contents (hyperref and beamer link each one to its section), a line of its own and never the
 * section's title, which is the link's target. doc.pdf's contents, on the page where section 1
 * starts, gave its entries as the outline's headings and left the titles below them bold text.
 */
function linksToPage(line: Line, links: readonly string[]): boolean {
  let ink = false;
  for (const c of line.chars) {
    if (!isInk(c.c)) continue;
    if (c.link < 0 || !links[c.link]?.startsWith('#page-')) return false;
    ink = true;
  }
  return ink;
}

/** The usual distance from one line to the next in the section (median of close pairs). */
function linePitch(lines: ReadonlyArray<Line | Item>): number {
  const deltas: number[] = [];
  let prev: Line | null = null;
  for (const x of lines) {
    if (!isLine(x)) { prev = null; continue; }
    if (prev && Math.abs(prev.size - x.size) <= 1) {
      const d = x.y1 - prev.y1;
      if (d > x.size * 0.9 && d < x.size * 2.5) deltas.push(d);
    }
    prev = x;
  }
  return median(deltas);
}

/** True when the line sits in the middle of its section, well in from both edges. */
function isCentred(line: Line, box: Box): boolean {
  const width = box.x1 - box.x0;
  return line.x1 - line.x0 <= width * 0.8 && line.x0 - box.x0 >= line.size * 2 &&
    Math.abs((line.x0 + line.x1) / 2 - (box.x0 + box.x1) / 2) <= Math.max(line.size, width * 0.03);
}

function blocksOf(section: readonly Item[], opts: RenderOptions, box: Box, inColumn: boolean): Block[] {
  const right = box.x1;
  const blocks: Block[] = [];
  let prev: Line | null = null;
  const lines = linesOf(section);
  // scripts set with tall line spacing (Arabic fonts) still wrap within a paragraph
  const pitch = linePitch(lines);
  // figures set inside a paragraph that goes on after them wait for its end
  let held: Block[] = [];
  for (const x of lines) {
    if (!isLine(x)) {
      const block: Block = { kind: 'raw', markdown: x.kind === 'table' ? x.markdown : x.kind === 'figure' ? opts.figure(x.index) : '' };
      if (x.kind === 'figure' && opts.structure && blocks[blocks.length - 1]?.kind === 'para' && prev && !endsSentence(prev.text)) {
        held.push(block);
        continue;
      }
      blocks.push(block);
      prev = null;
      continue;
    }
    if (held.length > 0) {
      const para = blocks[blocks.length - 1]!;
      if (para.kind === 'para' && /^\p{Ll}/u.test(x.text)) {
        para.lines.push(x);
        prev = x;
        continue;
      }
      blocks.push(...held);
      held = [];
      prev = null;
    }
    const cur = blocks[blocks.length - 1];
    const gap = prev ? x.y0 - prev.y1 : Infinity;
    const near = prev !== null && (gap <= Math.max(prev.size, x.size) * 0.5 || x.y1 - prev.y1 <= pitch * 1.15) &&
      gap > -x.size && Math.abs(prev.size - x.size) <= 1;
    if (!opts.structure) {
      if (near && cur && cur.kind === 'para') cur.lines.push(x);
      else blocks.push({ kind: 'para', lines: [x] });
      prev = x;
      continue;
    }
    const toc = LEADERS_RE.test(x.text) || linksToPage(x, opts.links);
    let byOutline = opts.outline && !toc ? opts.outline.match(x.text) : null;
    const styledLevel = (): number => levelOf(x, opts.stats, prev === null || gap >= x.size * 0.8, isCentred(x, box), inColumn);
    // a title the outline gives in a short form, on a line set as a heading
    if (byOutline && byOutline.level === 0 && !byOutline.continued && opts.outline!.waiting() && styledLevel() > 0) {
      const level = opts.outline!.matchShort(x.text);
      if (level > 0) byOutline = { level, continued: false };
    }
    let level = toc ? 0 : byOutline ? byOutline.level : styledLevel();
    // a line that goes on in lower case continues a heading above it, or is not one (a wrapped
    // caption's second line, "through 2021–22")
    if (level > 0 && !byOutline && /^\p{Ll}/u.test(x.text) &&
      !(near && cur?.kind === 'heading' && !cur.byOutline && styleKey(cur.lines[0]!.head) === styleKey(x.head))) level = 0;
    // a title broken at a hyphen goes on in this line ("… look differ-" / "ent"), even where the
    // line is not a title by itself; when it is a contents line ("ent  2", the page number far to
    // the right) the title above was the first line of an entry of the contents, not a title
    const brokenTitle = level === 0 && near && cur?.kind === 'heading' && !cur.byOutline && /^\p{Ll}/u.test(x.text) &&
      /\p{L}-$/u.test(cur.lines[cur.lines.length - 1]!.text) && styleKey(cur.lines[0]!.head) === styleKey(x.head);
    const bullet = BULLET_RE.exec(x.text);
    const ordered = ORDERED_RE.exec(x.text);
    const inCode = cur?.kind === 'code' && prev !== null && gap <= x.size * 1.5;
    // "• INTEGER;" with a code word is a list item, unless it sits inside a code block
    const code = (x.style & MONO) !== 0 && (!(bullet || ordered) || (inCode && x.allMono));
    if (level > 0 && byOutline) {
      if (byOutline.continued && cur?.kind === 'heading') cur.lines.push(x);
      else blocks.push({ kind: 'heading', level, lines: [x], byOutline: true, depth: 0 });
    } else if (level > 0) {
      const depth = numberDepth(x.text);
      // "Chapter 3" on a line of its own names the title set below it: one heading
      if (cur?.kind === 'heading' && !cur.byOutline && cur.lines.length === 1 && CHAPTER_RE.test(cur.lines[0]!.text)) {
        cur.lines.push(x);
        cur.level = Math.min(cur.level, level);
      } else if (near && depth === 0 && !/^\p{Lu}$/u.test(x.text) && (cur?.kind === 'heading' || (cur?.kind === 'para' && cur.level !== undefined)) &&
        !(cur.kind === 'heading' && cur.byOutline) && styleKey(cur.lines[0]!.head) === styleKey(x.head)) {
        // the next line of a title set over several lines
        cur.lines.push(x);
        // more than three lines of large type is a paragraph set large, not a heading
        if (cur.kind === 'heading' && cur.lines.length > 3) blocks[blocks.length - 1] = { kind: 'para', lines: cur.lines, level };
      } else {
        blocks.push({ kind: 'heading', level, lines: [x], depth });
      }
    } else if (brokenTitle) {
      cur.lines.push(x);
      if (toc || pageNumberAfterGap(x)) blocks[blocks.length - 1] = { kind: 'para', lines: cur.lines };
    } else if (code) {
      if (inCode) cur.lines.push(x);
      else blocks.push({ kind: 'code', lines: [x] });
    } else if ((bullet || ordered) && !(near && cur?.kind === 'para' && !endsSentence(prev!.text) && (ordered || /^[-–—]/.test(x.text)))) {
      blocks.push({ kind: 'item', ordered: ordered ? Number(ordered[1]) : null, indent: x.x0, lines: [x] });
    } else if (near && cur?.kind === 'item' && (x.x0 >= cur.indent + 2 ||
      // a wrapped item without a hanging indent: the line above ran to the margin mid-sentence
      (x.x0 >= cur.indent - 1 && prev!.x1 >= right - x.size * 2 && !endsSentence(prev!.text)))) {
      cur.lines.push(x);
    } else if (near && cur?.kind === 'para' && !toc && !LEADERS_RE.test(prev!.text) && !pageNumberAfterGap(prev!) &&
      // label–value lines of a form stay lines
      !(FORM_FIELD_RE.test(x.text) && FORM_FIELD_RE.test(prev!.text)) &&
      !(endsSentence(prev!.text) && (prev!.x1 < right - x.size * 3 || x.x0 > prev!.x0 + x.size * 0.8))) {
      cur.lines.push(x);
    } else {
      blocks.push({ kind: 'para', lines: [x] });
    }
    prev = x;
  }
  blocks.push(...held);
  // a title is a name, not sentences: lines set large that hold a full stop and go on with a
  // new sentence ("… positive for Campylobacter at retail (2.4%). Data from 2007 …") are text,
  // with the lines that go on in lower case after them
  for (let i = 0; i < blocks.length; i++) {
    const b = blocks[i]!;
    if (b.kind !== 'heading' || b.byOutline || !SENTENCES_RE.test(b.lines.map((l) => l.text).join(' '))) continue;
    const para: Block = { kind: 'para', lines: b.lines };
    const next = blocks[i + 1];
    if (next?.kind === 'para' && /^\p{Ll}/u.test(next.lines[0]!.text)) {
      para.lines.push(...next.lines);
      blocks.splice(i + 1, 1);
    }
    blocks[i] = para;
  }
  return blocks;
}

/** A sentence's end and the next sentence's start: a word or a closing bracket, a full stop, a capital. */
const SENTENCES_RE = /[\p{Ll})%]\.\s+\p{Lu}\p{Ll}/u;

const LETTERS_END_RE = /\p{L}+$/u;
const LETTERS_START_RE = /^\p{L}+/u;

/**
 * Whether the hyphen that ends a line belongs to the word ("chat-" + "optimized" stays
 * chat-optimized) or only splits it ("exam-" + "ple" is example), without a dictionary: the
 * document's own words decide. The joined word seen elsewhere: a split. The hyphenated form
 * seen, or both halves seen as words of their own: a compound. Neither: a split.
 */
function keepsHyphen(before: string, after: string, words: ReadonlySet<string> | null): boolean {
  if (!words) return false;
  const a = before.toLowerCase(), b = after.toLowerCase();
  if (words.has(a + b)) return false;
  if (words.has(`${a}-${b}`)) return true;
  return words.has(a) && words.has(b);
}

/** The characters of wrapped lines as one run: a split word is mended, other breaks are spaces. */
function joined(lines: readonly Line[], words: ReadonlySet<string> | null = null): PChar[] {
  const out: PChar[] = [];
  for (const line of lines) {
    const chars = line.chars;
    if (out.length > 0) {
      let k = out.length - 1;
      while (k >= 0 && out[k]!.c === ' ') k--;
      out.length = k + 1;
      const last = out[k];
      const before = out[k - 1];
      const next = chars.find((c) => c.c.trim() !== '');
      if (last && last.c === '-' && before && /\p{L}/u.test(before.c) && next && /\p{Ll}/u.test(next.c)) {
        const head = LETTERS_END_RE.exec(textOf(out.slice(Math.max(0, k - 40), k)))?.[0] ?? '';
        const tail = LETTERS_START_RE.exec(textOf(chars.slice(chars.indexOf(next), chars.indexOf(next) + 40)))?.[0] ?? '';
        if (!keepsHyphen(head, tail, words)) out.pop();
      } else if (last) out.push(SPACE(last));
    }
    out.push(...chars);
  }
  return out;
}

function render(block: Block, opts: RenderOptions, listPrefix: string): string {
  switch (block.kind) {
    case 'raw': return block.markdown;
    case 'heading': {
      const text = inlineMarkdown(joined(block.lines, opts.stats?.words ?? null), opts.links, false);
      return `${'#'.repeat(block.level)} ${text}`;
    }
    case 'code': {
      const left = boxOf(block.lines).x0;
      const body = block.lines.map((l) => {
        const em = l.size * 0.6;
        return ' '.repeat(Math.max(0, Math.round((l.x0 - left) / em))) + textOf(l.chars).trimEnd();
      }).join('\n');
      const fence = body.includes('```') ? '````' : '```';
      return `${fence}\n${body}\n${fence}`;
    }
    case 'item': {
      const chars = joined(block.lines, opts.stats?.words ?? null);
      const marker = (block.ordered !== null ? ORDERED_RE : BULLET_RE).exec(textOf(chars))?.[0].length ?? 0;
      const text = inlineMarkdown(chars.slice(marker), opts.links, true);
      return `${listPrefix}${block.ordered !== null ? `${block.ordered}. ` : '- '}${text}`;
    }
    case 'para': {
      const text = inlineMarkdown(joined(block.lines, opts.stats?.words ?? null), opts.links, opts.structure);
      return escapeBlockStart(text);
    }
  }
}

/**
 * Three or more headings of one style in a row with no text between them are not a heading
 * tree but text set large or bold (a slide's points, a cover's lines): they are paragraphs.
 * Headings the outline named are the author's and stay.
 */
function slideRuns(blocks: Block[]): Block[] {
  const isRun = (b: Block | undefined, style: string): b is Block & { kind: 'heading' } =>
    b?.kind === 'heading' && !b.byOutline && styleKey(headStyle(b)) === style;
  for (let i = 0; i < blocks.length;) {
    const first = blocks[i]!;
    let j = i + 1;
    if (first.kind === 'heading' && !first.byOutline) while (isRun(blocks[j], styleKey(headStyle(first)))) j++;
    if (j - i >= 3) for (let k = i; k < j; k++) blocks[k] = { kind: 'para', lines: (blocks[k] as Block & { kind: 'heading' }).lines };
    i = j;
  }
  return blocks;
}

/** The style a heading is ranked by: that of its strongest line ("Chapter 2" over "Results"). */
function headStyle(b: Block & { kind: 'heading' }): HeadingStyle {
  return b.lines.reduce((best, l) => stronger(l.head, best) ? l.head : best, b.lines[0]!.head);
}

/** A paragraph of body text: the end of a first page's title block. */
function isBodyText(b: Block, stats: DocStats): boolean {
  if (b.kind !== 'para' && b.kind !== 'item') return false;
  const chars = b.lines.reduce((n, l) => n + l.text.length, 0);
  return Math.abs(b.lines[0]!.size - stats.bodySize) <= 1 && (b.lines.length >= 2 || chars >= 80);
}

/** A heading's text ends in a footnote mark (an author's "∗", "†"). */
const marked = (b: Block & { kind: 'heading' }): boolean => /[∗*†‡§]$/u.test(b.lines[b.lines.length - 1]!.text);

/**
 * The final levels of the page's headings, in reading order (see headings.ts). On the first
 * page, the headings before the first paragraph of body text are its title block: the
 * strongest unnumbered one is the document's title (a footnote mark allowed); the others
 * that are neither numbered nor bold, or set in a style no other page has, are its authors,
 * affiliations and date: paragraphs. Elsewhere, a heading with a footnote mark is an author.
 */
function assignLevels(blocks: Block[], opts: RenderOptions): void {
  const stats = opts.stats;
  if (!stats) return;
  const tree = stats.tree;
  const titleBlock = new Set<Block>();
  let title: (Block & { kind: 'heading' }) | null = null;
  if (opts.firstPage) {
    for (const b of blocks) {
      if (isBodyText(b, stats)) break;
      if (b.kind !== 'heading' || b.byOutline) continue;
      titleBlock.add(b);
      if (b.depth === 0 && (!title || stronger(headStyle(b), headStyle(title)))) title = b;
    }
  }
  for (const [i, b] of blocks.entries()) {
    if (b.kind !== 'heading' || b.byOutline) continue;
    const style = headStyle(b);
    const byline = titleBlock.has(b) && b.depth === 0 && (!style.bold || tree.inTitleBlock(style));
    if (b === title) b.level = tree.title();
    else if (byline || marked(b)) blocks[i] = { kind: 'para', lines: b.lines };
    else b.level = tree.level(style, b.depth);
  }
}

const CONTENTS_RE = /^((table of )?contents|inhalt(sverzeichnis)?|table des matières|sommaire|índice|indice|inhoud(sopgave)?)$/i;

const isLeader = (l: Line): boolean => LEADERS_RE.test(l.text);
const isContentsTitle = (l: Line): boolean => CONTENTS_RE.test(l.text);
const namesContents = (b: Block): boolean => 'lines' in b && b.lines.some(isContentsTitle);

/**
 * On a contents page (titled so, and three lines or more end in leaders), a heading followed by
 * leader lines is an entry set bold over the lines it holds ("Issue 1, February 2009", "3
 * Examples"), not a section of the document: a paragraph. The page's title stays a heading, as
 * do the sections set on the page beside or after the list.
 */
function contentsEntries(blocks: Block[]): Block[] {
  let leaders = 0;
  for (const b of blocks) if ('lines' in b) for (const l of b.lines) if (isLeader(l)) leaders++;
  if (leaders < 3 || !blocks.some(namesContents)) return blocks;
  return blocks.map((b, i) => {
    const next = blocks[i + 1];
    const entry = b.kind === 'heading' && !b.byOutline && !CONTENTS_RE.test(b.lines[0]!.text) &&
      next !== undefined && 'lines' in next && isLeader(next.lines[0]!);
    return entry ? { kind: 'para', lines: b.lines } : b;
  });
}

/** Markdown of one page from its sections (see layout.ts). */
export function renderSections(sections: readonly Item[][], opts: RenderOptions): string {
  const out: string[] = [];
  const page = boxOf(sections.flat());
  const all = sections.map((section) => {
    const box = boxOf(section);
    return slideRuns(blocksOf(section, opts, box, box.x1 - box.x0 <= (page.x1 - page.x0) * 0.6));
  });
  const flat = contentsEntries(all.flat());
  assignLevels(flat, opts);
  let at = 0;
  for (const section of all) {
    const blocks = flat.slice(at, at + section.length);
    at += section.length;
    // list nesting: a stack of item indents and the prefix their children need
    let stack: Array<{ indent: number; prefix: string }> = [];
    let lastWasItem = false;
    let lastOrdered = false;
    for (const b of blocks) {
      let prefix = '';
      if (b.kind === 'item') {
        if (!lastWasItem) stack = [];
        // siblings and shallower items close the items above them
        while (stack.length > 0 && b.indent < stack[stack.length - 1]!.indent + 4) stack.pop();
        prefix = stack.length > 0 ? stack[stack.length - 1]!.prefix : '';
        const width = b.ordered !== null ? `${b.ordered}. `.length : 2;
        stack.push({ indent: b.indent, prefix: prefix + ' '.repeat(width) });
      }
      const md = render(b, opts, prefix);
      if (md.trim() === '') continue;
      // consecutive items of one list are separated by a single newline (a tight list)
      const ordered = b.kind === 'item' && b.ordered !== null;
      if (b.kind === 'item' && lastWasItem && (ordered === lastOrdered || prefix !== '')) out[out.length - 1] += `\n${md}`;
      else out.push(md);
      lastWasItem = b.kind === 'item';
      if (prefix === '') lastOrdered = ordered;
    }
  }
  return out.join('\n\n');
}
