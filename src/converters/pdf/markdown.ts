// Markdown blocks from one page's sections in reading order: fragments on one baseline become
// a line; lines become headings (by the document's size statistics), list items (bullets and
// numbers, nested by indent), code blocks (all-monospace lines) or paragraphs, re-joined
// across line breaks with split words mended. Tables and figures arrive ready-made.
// With `structure` off (quality fast) every text block is a plain paragraph.
import { escapeBlockStart, inlineMarkdown } from './inline.js';
import { BOLD, BULLET_RE, boxOf, ITALIC, type Item, MONO, ORDERED_RE, type PChar, textOf } from './model.js';
import { type DocStats, headingLevel } from './stats.js';

export interface RenderOptions {
  stats: DocStats | null;
  structure: boolean;
  links: readonly string[];
  figure(index: number): string;
}

interface Line {
  chars: PChar[]; x0: number; x1: number; y0: number; y1: number; size: number; text: string;
  style: number;
  /** Every character is monospace (style has MONO when most are). */
  allMono: boolean;
}

type Block =
  | { kind: 'para' | 'code'; lines: Line[]; level?: number }
  | { kind: 'heading'; level: number; lines: Line[] }
  | { kind: 'item'; ordered: number | null; indent: number; lines: Line[] }
  | { kind: 'raw'; markdown: string };

const SPACE = (like: PChar): PChar => ({ ...like, c: ' ', x0: like.x1, x1: like.x1 });

/** Replaces dot leaders (". . . . ." in a table of contents) by one plain "…", in place. */
function collapseLeaders(chars: PChar[]): void {
  for (let i = 0; i < chars.length; i++) {
    if (chars[i]!.c !== '.') continue;
    let j = i, dots = 0;
    while (j < chars.length && (chars[j]!.c === '.' || chars[j]!.c === ' ')) { if (chars[j]!.c === '.') dots++; j++; }
    if (dots >= 4 && j < chars.length) {
      const like = chars[i]!;
      chars.splice(i, j - i, { ...like, c: ' ', style: 0, link: -1 }, { ...like, c: '…', style: 0, link: -1 }, { ...like, c: ' ', style: 0, link: -1 });
      i += 2;
    } else {
      i = j;
    }
  }
}

/** Merges the section's text items that share a baseline into lines, keeping other items. */
function linesOf(section: readonly Item[]): Array<Line | Item> {
  const out: Array<Line | Item> = [];
  let row: Array<Item & { kind: 'text' }> = [];
  const flush = (): void => {
    if (row.length === 0) return;
    row.sort((a, b) => a.x0 - b.x0);
    const chars: PChar[] = [];
    for (const it of row) {
      if (chars.length > 0) chars.push(SPACE(chars[chars.length - 1]!));
      chars.push(...it.frag.chars.filter((c) => c.c !== '\u00ad'));
    }
    collapseLeaders(chars);
    const ink = chars.filter((c) => c.c.trim() !== '');
    // bold/italic must hold for every character; a code line may contain a few glyphs the
    // PDF drew from a fallback font, so monospace needs only most of them
    let style = ink.reduce((s, c) => s & c.style, BOLD | ITALIC);
    const monoCount = ink.filter((c) => c.style & MONO).length;
    if (monoCount >= ink.length * 0.8) style |= MONO;
    const size = row.reduce((m, r) => Math.max(m, r.frag.size), 0);
    const box = boxOf(row);
    out.push({
      chars, size, style, allMono: monoCount === ink.length, text: textOf(chars).trim(),
      x0: box.x0, x1: box.x1, y0: box.y0, y1: box.y1,
    });
    row = [];
  };
  for (const it of section) {
    if (it.kind !== 'text') { flush(); out.push(it); continue; }
    const first = row[0];
    if (first && Math.abs(it.frag.base - first.frag.base) > Math.min(it.frag.size, first.frag.size) * 0.35) flush();
    row.push(it);
  }
  flush();
  return out;
}

const isLine = (x: Line | Item): x is Line => !('kind' in x);
const endsSentence = (s: string): boolean => /[.!?:;"”’)]$/.test(s);
/** A table-of-contents line: dot leaders before a page number. */
const LEADERS_RE = /(\.\s?){4,}[^.]{0,3}\s*\S*\d+$| … \S*\d+$/;

function levelOf(line: Line, stats: DocStats | null): number {
  if (!stats) return 0;
  const level = headingLevel(stats, line.size, line.style);
  if (level === 0) return 0;
  const bySize = line.size >= stats.bodySize * 1.12;
  // a bold line at body size is a heading only when it is short and not a sentence
  if (!bySize && (line.text.length > 80 || /[.,;]$/.test(line.text) || line.text.split(/\s+/).length > 12)) return 0;
  return level;
}

function blocksOf(section: readonly Item[], opts: RenderOptions, right: number): Block[] {
  const blocks: Block[] = [];
  let prev: Line | null = null;
  for (const x of linesOf(section)) {
    if (!isLine(x)) {
      blocks.push({ kind: 'raw', markdown: x.kind === 'table' ? x.markdown : x.kind === 'figure' ? opts.figure(x.index) : '' });
      prev = null;
      continue;
    }
    const cur = blocks[blocks.length - 1];
    const gap = prev ? x.y0 - prev.y1 : Infinity;
    const near = prev !== null && gap <= Math.max(prev.size, x.size) * 0.5 && gap > -x.size && Math.abs(prev.size - x.size) <= 1;
    if (!opts.structure) {
      if (near && cur && cur.kind === 'para') cur.lines.push(x);
      else blocks.push({ kind: 'para', lines: [x] });
      prev = x;
      continue;
    }
    const toc = LEADERS_RE.test(x.text);
    const level = toc ? 0 : levelOf(x, opts.stats);
    const bullet = BULLET_RE.exec(x.text);
    const ordered = ORDERED_RE.exec(x.text);
    const inCode = cur?.kind === 'code' && prev !== null && gap <= x.size * 1.5;
    // "• INTEGER;" with a code word is a list item, unless it sits inside a code block
    const code = (x.style & MONO) !== 0 && (!(bullet || ordered) || (inCode && x.allMono));
    if (level > 0) {
      if (near && (cur?.kind === 'heading' || cur?.kind === 'para') && cur.level === level) {
        cur.lines.push(x);
        // more than three lines of large type is a paragraph set large, not a heading
        if (cur.kind === 'heading' && cur.lines.length > 3) blocks[blocks.length - 1] = { kind: 'para', lines: cur.lines, level };
      } else {
        blocks.push({ kind: 'heading', level, lines: [x] });
      }
    } else if (code) {
      if (inCode) cur.lines.push(x);
      else blocks.push({ kind: 'code', lines: [x] });
    } else if (bullet || ordered) {
      blocks.push({ kind: 'item', ordered: ordered ? Number(ordered[1]) : null, indent: x.x0, lines: [x] });
    } else if (near && cur?.kind === 'item' && (x.x0 >= cur.indent + 2 ||
      // a wrapped item without a hanging indent: the line above ran to the margin mid-sentence
      (x.x0 >= cur.indent - 1 && prev!.x1 >= right - x.size * 2 && !endsSentence(prev!.text)))) {
      cur.lines.push(x);
    } else if (near && cur?.kind === 'para' && !toc && !LEADERS_RE.test(prev!.text) &&
      !(endsSentence(prev!.text) && (prev!.x1 < right - x.size * 3 || x.x0 > prev!.x0 + x.size * 0.8))) {
      cur.lines.push(x);
    } else {
      blocks.push({ kind: 'para', lines: [x] });
    }
    prev = x;
  }
  return blocks;
}

/** The characters of wrapped lines as one run: a split word is mended, other breaks are spaces. */
function joined(lines: readonly Line[]): PChar[] {
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
      if (last && last.c === '-' && before && /\p{L}/u.test(before.c) && next && /\p{Ll}/u.test(next.c)) out.pop();
      else if (last) out.push(SPACE(last));
    }
    out.push(...chars);
  }
  return out;
}

function render(block: Block, opts: RenderOptions, listPrefix: string): string {
  switch (block.kind) {
    case 'raw': return block.markdown;
    case 'heading': {
      const text = inlineMarkdown(joined(block.lines), opts.links, false);
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
      const chars = joined(block.lines);
      const marker = (block.ordered !== null ? ORDERED_RE : BULLET_RE).exec(textOf(chars))?.[0].length ?? 0;
      const text = inlineMarkdown(chars.slice(marker), opts.links, true);
      return `${listPrefix}${block.ordered !== null ? `${block.ordered}. ` : '- '}${text}`;
    }
    case 'para': {
      const text = inlineMarkdown(joined(block.lines), opts.links, opts.structure);
      return escapeBlockStart(text);
    }
  }
}

/** Markdown of one page from its sections (see layout.ts). */
export function renderSections(sections: readonly Item[][], opts: RenderOptions): string {
  const out: string[] = [];
  for (const section of sections) {
    const right = boxOf(section).x1;
    const blocks = blocksOf(section, opts, right);
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
