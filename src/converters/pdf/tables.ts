// Tables on a PDF page, as GFM tables. Two detectors:
// - ruled: horizontal and vertical rules (thin vector boxes, rectangle edges) that cross each
//   other form a grid; each character goes to the cell its centre falls in. A column edge with
//   no rule splits a row unless a word runs across it (then the cell is merged).
// - aligned: three or more consecutive lines split into short pieces that fall into the same
//   vertical bands form columns, even with no rules drawn; trailing numbers are split apart
//   first. What reads as a form, a list or chart labels is left as text. With `sparse` (table
//   mode accurate) rows of one short piece inside such a run belong to the table.
// Both return the tables as reading-order items and the fragments they did not use. A table of
// right-to-left script (Arabic, Hebrew) reads from its right: its rightmost column comes first
// and each cell's text is in logical order, numbers and Latin words inside it left to right.
import { gfmTable } from '../shared/gfm-table.js';
import { joinLines } from '../shared/ocr.js';
import type { VecBox } from './extract.js';
import { makeFrag } from './extract.js';
import { type Box, byBaseThenX0, byX0, type Frag, isInkChar, isLtrChar, type Item, mostlyRtl, type PChar, textOf } from './model.js';

interface HSeg { y: number; x0: number; x1: number }
interface VSeg { x: number; y0: number; y1: number }

const THIN = 3;
const MAX_PAIRS = 4_000_000;
const TOL = 2.5;

function segments(vectors: readonly VecBox[], pageArea: number): { h: HSeg[]; v: VSeg[] } {
  const h: HSeg[] = [];
  const v: VSeg[] = [];
  for (const b of vectors) {
    const w = b.x1 - b.x0;
    const ht = b.y1 - b.y0;
    if (ht <= THIN && w >= 6) h.push({ y: (b.y0 + b.y1) / 2, x0: b.x0, x1: b.x1 });
    else if (w <= THIN && ht >= 6) v.push({ x: (b.x0 + b.x1) / 2, y0: b.y0, y1: b.y1 });
    else if (b.rect && w >= 6 && ht >= 6 && w * ht < pageArea * 0.5) {
      h.push({ y: b.y0, x0: b.x0, x1: b.x1 }, { y: b.y1, x0: b.x0, x1: b.x1 });
      v.push({ x: b.x0, y0: b.y0, y1: b.y1 }, { x: b.x1, y0: b.y0, y1: b.y1 });
    }
  }
  return { h, v };
}

/** Distinct values, each within `tol` of the previous one folded together. */
function clusters(values: number[], tol: number): number[] {
  const s = Float64Array.from(values).sort();
  const out: number[] = [];
  for (const x of s) if (out.length === 0 || x - out[out.length - 1]! > tol) out.push(x);
  return out;
}

/** The index of the interval between consecutive `edges` that `v` falls in, clamped. */
function slot(edges: number[], v: number): number {
  let n = 0;
  for (const e of edges) if (e <= v) n++;
  return Math.min(edges.length - 2, Math.max(0, n - 1));
}

/** True when a vertical rule at `x` runs from `y0` to `y1`. */
function ruled(v: readonly VSeg[], x: number, y0: number, y1: number): boolean {
  for (const s of v) if (Math.abs(s.x - x) <= TOL && s.y0 <= y0 + TOL && s.y1 >= y1 - TOL) return true;
  return false;
}

/** True when a word of `chars` (one table row) runs across the vertical line at `x`. */
function crossed(chars: readonly PChar[], x: number): boolean {
  const sorted = [...chars].sort(byLineThenLeft);
  for (let k = 0; k < sorted.length; k++) {
    const ch = sorted[k]!;
    if (ch.c.trim() === '') continue;
    if (ch.x0 < x - 0.5 && ch.x1 > x + 0.5) return true;
    const next = sorted[k + 1];
    if (next && next.c.trim() !== '' && Math.abs(next.base - ch.base) <= ch.size * 0.4 &&
      ch.x1 <= x + 0.5 && next.x0 >= x - 0.5 && next.x0 - ch.x1 < ch.size * 0.25) return true;
  }
  return false;
}

/** Groups rules into grids: a horizontal and a vertical rule that cross are in the same grid. */
function grids(h: HSeg[], v: VSeg[]): Array<{ h: HSeg[]; v: VSeg[] }> {
  const parent = Array.from({ length: h.length + v.length }, (_, i) => i);
  const find = (i: number): number => { while (parent[i] !== i) { parent[i] = parent[parent[i]!]!; i = parent[i]!; } return i; };
  for (let i = 0; i < h.length; i++) {
    for (let j = 0; j < v.length; j++) {
      const a = h[i]!, b = v[j]!;
      if (b.x >= a.x0 - TOL && b.x <= a.x1 + TOL && a.y >= b.y0 - TOL && a.y <= b.y1 + TOL) {
        parent[find(i)] = find(h.length + j);
      }
    }
  }
  const groups = new Map<number, { h: HSeg[]; v: VSeg[] }>();
  const group = (i: number): { h: HSeg[]; v: VSeg[] } => {
    const r = find(i);
    let g = groups.get(r);
    if (!g) { g = { h: [], v: [] }; groups.set(r, g); }
    return g;
  };
  h.forEach((s, i) => group(i).h.push(s));
  v.forEach((s, j) => group(h.length + j).v.push(s));
  return [...groups.values()];
}

/** Characters in lines (a baseline more than 0.4 of a size away starts a new one), each read
 *  from its left or from its right. */
const byLineThenLeft = (a: PChar, b: PChar): number => (Math.abs(a.base - b.base) > a.size * 0.4 ? a.base - b.base : a.x0 - b.x0);
const byLineThenRight = (a: PChar, b: PChar): number => (Math.abs(a.base - b.base) > a.size * 0.4 ? a.base - b.base : b.x1 - a.x1);
const byStart = (a: [number, number], b: [number, number]): number => a[0] - b[0];

/** Text of the characters of one cell: wrapped lines joined, split words mended. */
function cellText(chars: PChar[]): string {
  const rtl = mostlyRtl(chars);
  chars.sort(rtl ? byLineThenRight : byLineThenLeft);
  const lines: string[] = [];
  let line: string[] = [];
  let prev: PChar | null = null;
  const flush = (): void => { lines.push((rtl ? logicalOrder(line) : line).join('')); line = []; };
  for (const ch of chars) {
    if (prev && Math.abs(ch.base - prev.base) > prev.size * 0.4) { flush(); prev = null; }
    const gap = prev ? (rtl ? prev.x0 - ch.x1 : ch.x0 - prev.x1) : 0;
    if (prev && gap > prev.size * 0.2 && ch.c !== ' ' && prev.c !== ' ') line.push(' ');
    line.push(ch.c);
    prev = ch;
  }
  flush();
  return joinLines(lines).replace(/\s+/g, ' ').trim();
}

/**
 * Characters of a right-to-left line taken from right to left, in logical order: runs of
 * left-to-right text inside it (numbers, Latin words, with the spaces and punctuation between
 * their characters) turned back to read left to right.
 */
function logicalOrder(visual: readonly string[]): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < visual.length) {
    if (!isLtrChar(visual[i]!)) { out.push(visual[i]!); i++; continue; }
    let j = i, end = i;
    while (j < visual.length && (isLtrChar(visual[j]!) || /^[\s.,:;/%+\-–()]$/u.test(visual[j]!))) {
      if (isLtrChar(visual[j]!)) end = j;
      j++;
    }
    for (let k = end; k >= i; k--) out.push(visual[k]!);
    i = end + 1;
  }
  return out;
}

/** The rows of a right-to-left table in reading order: its rightmost column first. */
function readingColumns(rows: string[][]): string[][] {
  const letters = rows.flat().join('');
  const rtl = (letters.match(/[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]/gu) ?? []).length;
  const all = (letters.match(/\p{L}/gu) ?? []).length;
  return rtl > all / 2 ? rows.map((r) => [...r].reverse()) : rows;
}

/**
 * A right-to-left fragment split where its characters leave a gap wider than an em on the page:
 * a row of an Arabic or Hebrew table the PDF wrote as one run ("120 ⟵ gap ⟶ الشمال"). The pieces
 * keep their characters' order. Left-to-right text is split by extract.ts already.
 */
function splitRtlGaps(f: Frag): Frag[] {
  if (!mostlyRtl(f.chars)) return [f];
  const ink = f.chars.filter(isInkChar).sort(byX0);
  const cuts: number[] = [];
  for (let k = 1; k < ink.length; k++) {
    if (ink[k]!.x0 - ink[k - 1]!.x1 > Math.max(f.size, 4)) cuts.push((ink[k]!.x0 + ink[k - 1]!.x1) / 2);
  }
  if (cuts.length === 0) return [f];
  const pieces: PChar[][] = cuts.map(() => []).concat([[]]);
  for (const ch of f.chars) {
    // the number of cuts left of the character's centre (cuts run left to right)
    const cx = (ch.x0 + ch.x1) / 2;
    let lo = 0, hi = cuts.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (cuts[mid]! < cx) lo = mid + 1; else hi = mid; }
    pieces[lo]!.push(ch);
  }
  return pieces.filter((p) => p.some((c) => c.c.trim() !== '')).map((p) => makeFrag(p.filter((c, k) => c.c.trim() !== '' || (k > 0 && k < p.length - 1))));
}

/** Drops rows and columns with no text; null when fewer than 2×2 cells remain. */
function prune(rows: string[][]): string[][] | null {
  const kept = rows.filter(hasText);
  if (kept.length < 2) return null;
  const cols: number[] = [];
  for (let j = 0; j < kept[0]!.length; j++) if (kept.some((r) => r[j] !== '')) cols.push(j);
  if (cols.length < 2) return null;
  return kept.map((r) => cols.map((j) => r[j]!));
}

const filled = (c: string): boolean => c !== '';
const hasText = (r: readonly string[]): boolean => r.some(filled);

/** Removes the characters inside `box` from the fragments; what is left stays a fragment. */
function carve(frags: Frag[], box: Box): { inside: PChar[]; rest: Frag[] } {
  const inside: PChar[] = [];
  const rest: Frag[] = [];
  for (const f of frags) {
    if (f.x1 < box.x0 || f.x0 > box.x1 || f.y1 < box.y0 || f.y0 > box.y1) { rest.push(f); continue; }
    const out: PChar[] = [];
    for (const ch of f.chars) {
      const cx = (ch.x0 + ch.x1) / 2;
      const cy = ch.base - ch.size * 0.3;
      if (cx >= box.x0 - 1 && cx <= box.x1 + 1 && cy >= box.y0 - 1 && cy <= box.y1 + 1) inside.push(ch);
      else out.push(ch);
    }
    if (out.some((c) => c.c.trim() !== '')) rest.push(makeFrag(out));
  }
  return { inside, rest };
}

/** Tables drawn with rules. */
export function ruledTables(frags: Frag[], vectors: readonly VecBox[], pageArea: number): { tables: Item[]; frags: Frag[] } {
  const { h, v } = segments(vectors, pageArea);
  const tables: Item[] = [];
  // pairing rules is quadratic; a page with this many is a drawing (a map, a plan), not a form
  if (h.length * v.length > MAX_PAIRS) return { tables, frags };
  let rest = frags;
  for (const g of grids(h, v)) {
    const ys = clusters(g.h.map((s) => s.y), TOL);
    const xs = clusters(g.v.map((s) => s.x), TOL);
    if (ys.length < 2 || xs.length < 2 || (ys.length - 1) * (xs.length - 1) < 2) continue;
    const box = { x0: xs[0]!, y0: ys[0]!, x1: xs[xs.length - 1]!, y1: ys[ys.length - 1]! };
    const carved = carve(rest, box);
    const cells: PChar[][][] = ys.slice(1).map(() => xs.slice(1).map(() => []));
    const byRow: PChar[][] = ys.slice(1).map(() => []);
    for (const ch of carved.inside) byRow[slot(ys, ch.base - ch.size * 0.3)]!.push(ch);
    for (const [i, chars] of byRow.entries()) {
      // a merged cell has no rule between its columns and text that runs across the edge: its
      // text stays in its first column; an unruled edge that no word crosses still splits
      const open = xs.map((x, j) => j > 0 && j < xs.length - 1 && !ruled(g.v, x, ys[i]!, ys[i + 1]!) && crossed(chars, x));
      for (const ch of chars) {
        let j = slot(xs, (ch.x0 + ch.x1) / 2);
        while (j > 0 && open[j]) j--;
        cells[i]![j]!.push(ch);
      }
    }
    const pruned = prune(cells.map((r) => r.map(cellText)));
    if (!pruned) continue;
    const rows = readingColumns(pruned);
    tables.push({ kind: 'table', ...box, markdown: gfmTable(rows) });
    rest = carved.rest;
  }
  return { tables, frags: rest };
}

interface Row { frags: Frag[]; base: number; y0: number; y1: number; size: number }

function rowsOf(frags: Frag[]): Row[] {
  const sorted = [...frags].sort(byBaseThenX0);
  const rows: Row[] = [];
  for (const f of sorted) {
    const last = rows[rows.length - 1];
    if (last && Math.abs(f.base - last.base) <= Math.min(f.size, last.size) * 0.35) {
      last.frags.push(f);
      last.y0 = Math.min(last.y0, f.y0);
      last.y1 = Math.max(last.y1, f.y1);
    } else {
      rows.push({ frags: [f], base: f.base, y0: f.y0, y1: f.y1, size: f.size });
    }
  }
  for (const r of rows) r.frags.sort(byX0);
  return rows;
}

/** The vertical bands the fragments of `rows` fall into, or null when they are not table-like. */
function bands(rows: readonly Row[]): Array<[number, number]> | null {
  const spans: Array<[number, number]> = [];
  for (const r of rows) for (const f of r.frags) spans.push([f.x0, f.x1]);
  spans.sort(byStart);
  const out: Array<[number, number]> = [];
  for (const [a, b] of spans) {
    const last = out[out.length - 1];
    if (last && a <= last[1] + 2) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  if (out.length < 2) return null;
  let cells = 0;
  let chars = 0;
  for (const r of rows) {
    for (const f of r.frags) {
      cells++;
      chars += textOf(f.chars).trim().length;
    }
  }
  if (chars / cells > 25) return null;
  return out;
}

/** Rows split into aligned pieces that read as something else than a table: a key–value form
 *  (`Report ID:  SPARSE-2024`), a list (a column of bullets or numbers), labels scattered over
 *  a chart (most cells empty), or prose with notes beside it (runsOn). */
function tableLike(rows: string[][]): boolean {
  let full = 0;
  let keyed = 0;
  const first: string[] = [];
  for (const r of rows) {
    let n = 0;
    for (const c of r) if (c !== '') n++;
    full += n;
    if (n <= 2 && /:$/.test(r[0]!)) keyed++;
    if (r[0] !== '') first.push(r[0]!);
  }
  if (full < rows.length * rows[0]!.length * 0.5) return false;
  if (first.length > 0 && first.every(isListMarker)) return false;
  if (runsOn(rows)) return false;
  if (keyed >= rows.length * 0.5) return false;
  return !isContents(rows);
}

/**
 * A column whose text runs on from one row into the next as a sentence does (a cell of six
 * words or more that does not end one, then one that starts in lower case) while the row it
 * runs into has text in another column too: the lines of a paragraph beside notes in the margin
 * (a documented macro's name set left of the text that describes it, ltxdoc), or the two
 * columns of a page of prose. A table's wrapped cell goes on in a row of its own, the other
 * columns empty.
 */
function runsOn(rows: string[][]): boolean {
  for (let k = 0; k < rows[0]!.length; k++) {
    for (let i = 1; i < rows.length; i++) {
      const above = rows[i - 1]![k]!;
      const below = rows[i]![k]!;
      // not markdown.ts's endsSentence: a closing bracket or quote ends a clause that may go on
      // ("… older formats (rollback as far as 2019-10-01)" / "and Plain. …", a code comment)
      if (!/^\p{Ll}/u.test(below) || /[.:;!?]$/.test(above) || above.split(/\s+/).length < 6) continue;
      if (rows[i]!.some((c, j) => j !== k && c !== '')) return true;
    }
  }
  return false;
}

const LIST_MARKER_RE = /^([•◦▪▫●○■□‣⁃∙·\-–—*»►✓✔]|\(?\d{1,3}[.)]|[a-z][.)])$/u;
const isListMarker = (c: string): boolean => LIST_MARKER_RE.test(c);

/** A table of contents: titles whose last column is page numbers that never go down, or lines
 *  with dot leaders. */
function isContents(rows: string[][]): boolean {
  let leadered = 0;
  let titled = 0;
  const numbered: number[] = [];
  for (const r of rows) {
    if (r.some(hasLeaders)) leadered++;
    if (r.some(isTitle)) titled++;
    // the row's last filled cell
    let k = r.length - 1;
    while (k >= 0 && r[k] === '') k--;
    if (k >= 0 && /^\d{1,4}$/.test(r[k]!)) numbered.push(Number(r[k]));
  }
  if (leadered >= rows.length * 0.5) return true;
  if (numbered.length < rows.length * 0.8 || numbered.length < 3) return false;
  let rising = true;
  for (let i = 1; i < numbered.length; i++) if (numbered[i]! < numbered[i - 1]!) rising = false;
  return rising && titled >= rows.length * 0.5 && numbered[numbered.length - 1]! > numbered[0]!;
}

const hasLeaders = (c: string): boolean => /(\.\s?){4,}/.test(c);
const isTitle = (c: string): boolean => /\p{L}{3,}.*\s\p{L}{3,}/u.test(c);

/** Tables whose columns are only aligned by whitespace (table_mode accurate). */
const NUMBER_RE = /^[-+−(]?[$€£¥]?\d[\d,.\u00a0]*%?\)?$|^[-–—]$/u;

/** A fragment whose text ends in two or more numbers split into its label and one piece per
 *  number: numeric columns set with gutters narrower than an em arrive as one fragment. */
function splitNumbers(f: Frag): Frag[] {
  const words: PChar[][] = [];
  let word: PChar[] = [];
  for (const ch of f.chars) {
    if (ch.c.trim() === '') { if (word.length > 0) words.push(word); word = []; continue; }
    if (word.length > 0 && ch.x0 - word[word.length - 1]!.x1 > ch.size * 0.2) { words.push(word); word = []; }
    word.push(ch);
  }
  if (word.length > 0) words.push(word);
  let k = words.length;
  while (k > 0 && NUMBER_RE.test(textOf(words[k - 1]!))) k--;
  if (words.length - k < 2) return [f];
  const out: Frag[] = [];
  if (k > 0) {
    const end = words[k - 1]![words[k - 1]!.length - 1]!.x1 + 0.01;
    const label: PChar[] = [];
    for (const ch of f.chars) if (ch.x1 <= end) label.push(ch);
    out.push(makeFrag(label));
  }
  for (let w = k; w < words.length; w++) out.push(makeFrag(words[w]!));
  return out;
}

/** Whether row `j` sits close under row `j - 1` (the rows of one table). */
function near(rows: readonly Row[], j: number): boolean {
  return rows[j]!.y0 - rows[j - 1]!.y1 <= rows[j - 1]!.size * 1.5;
}

/** sparse (table_mode accurate): a row with one short piece (a section label, a value whose
 *  neighbours are empty) inside a run of split rows belongs to the table. */
function lone(rows: readonly Row[], j: number): boolean {
  return rows[j]!.frags.length === 1 && textOf(rows[j]!.frags[0]!.chars).trim().length <= 40 &&
    j + 1 < rows.length && rows[j + 1]!.frags.length >= 2 && near(rows, j + 1);
}

/** The end of the run of split rows that starts at row `i`. */
function runEnd(rows: readonly Row[], i: number, sparse: boolean): number {
  let j = i;
  while (j < rows.length && (rows[j]!.frags.length >= 2 || (sparse && j > i && lone(rows, j))) && (j === i || near(rows, j))) j++;
  return j;
}

/** The table a run of rows makes, or null when it is not one. */
function alignedTable(run: readonly Row[]): Item | null {
  const cols = run.length >= 3 ? bands(run) : null;
  if (!cols) return null;
  const grid: string[][] = [];
  for (const r of run) {
    const cells: PChar[][] = [];
    for (let k = 0; k < cols.length; k++) cells.push([]);
    for (const f of r.frags) {
      let k = 0;
      while (k < cols.length && !(f.x0 >= cols[k]![0] - 0.5 && f.x1 <= cols[k]![1] + 0.5)) k++;
      cells[k < cols.length ? k : 0]!.push(...f.chars);
    }
    grid.push(cells.map(cellText));
  }
  const pruned = prune(grid);
  const rows = pruned && readingColumns(pruned);
  if (!rows || !tableLike(rows)) return null;
  const box = { x0: cols[0]![0], y0: run[0]!.y0, x1: cols[cols.length - 1]![1], y1: run[run.length - 1]!.y1 };
  return { kind: 'table', ...box, markdown: gfmTable(rows) };
}

export function alignedTables(original: Frag[], opts: { sparse: boolean }): { tables: Item[]; frags: Frag[] } {
  const source = new Map<Frag, Frag>();
  const frags: Frag[] = [];
  for (const f of original) {
    for (const rtlPiece of splitRtlGaps(f)) {
      for (const p of splitNumbers(rtlPiece)) {
        source.set(p, f);
        frags.push(p);
      }
    }
  }
  const rows = rowsOf(frags);
  const tables: Item[] = [];
  const taken = new Set<Frag>();
  let i = 0;
  while (i < rows.length) {
    // the sparse reading first; where it makes no table, the strict one
    let j = runEnd(rows, i, opts.sparse);
    let found = alignedTable(rows.slice(i, j));
    if (!found && opts.sparse) {
      j = runEnd(rows, i, false);
      found = alignedTable(rows.slice(i, j));
    }
    if (found) {
      tables.push(found);
      for (let k = i; k < j; k++) for (const f of rows[k]!.frags) taken.add(source.get(f)!);
    }
    i = Math.max(j, i + 1);
  }
  return { tables, frags: original.filter((f) => !taken.has(f)) };
}
