// Reading order of one page. Multi-column pages are read column by column: a gutter is a
// vertical band, well inside the text area, that (almost) no text line crosses and that has
// text on both sides. Items that do cross a gutter (a title over both columns, a wide table)
// cut the page into bands; each band is read left column first, then the next column.
// A page whose columns start below full-width text (an index under its heading and opening
// paragraph) has no gutter clear down the whole page: then the page is cut at its full-width
// lines and each stretch between them is looked at on its own, with a stricter test (real
// columns of text on both sides, not a code listing's comments or a form's labels).
// The result is a list of sections; a section boundary is always a paragraph boundary.
import { boxOf, byX0, byY0ThenX0, type Item, median, MONO } from './model.js';

/** Narrowest white band taken for a gutter between columns, in points. */
const MIN_GUTTER = 8;
/** A gutter must leave at least this much text width on each side, in points. */
const MIN_COLUMN = 60;
/** Text narrower than this (a number, a marker) is no evidence of a column, in points. */
const MIN_PIECE = 24;
/** Text at least this share of the page's text width spans it: a band boundary. */
const FULL_WIDTH = 0.6;
/** In a band, each column needs pieces of text at least this share of the band's width. */
const BAND_PIECE = 0.25;

interface Gutter { x0: number; x1: number }

function gutters(items: readonly Item[], pageWidth: number, strict = false): Gutter[] {
  const text = items.filter((i) => i.kind === 'text');
  if (text.length < 6) return [];
  if (strict && monoShare(text) >= 0.8) return [];
  const width = Math.max(1, Math.ceil(pageWidth));
  const cover = new Float64Array(width + 2);
  let minX = Infinity, maxX = -Infinity;
  for (const it of text) {
    const a = Math.max(0, Math.floor(it.x0));
    const b = Math.min(width, Math.ceil(it.x1));
    for (let x = a; x <= b; x++) cover[x]! += it.y1 - it.y0;
    minX = Math.min(minX, it.x0);
    maxX = Math.max(maxX, it.x1);
  }
  const used: number[] = [];
  for (let x = 0; x <= width; x++) if (cover[x]! > 0) used.push(cover[x]!);
  // in a band, lines of a title block above the columns may cross the gutter (see below)
  const threshold = median(used) * (strict ? 0.25 : 0.15);
  const out: Gutter[] = [];
  let start = -1;
  const from = Math.max(0, Math.floor(minX + MIN_COLUMN));
  const to = Math.min(width, Math.ceil(maxX - MIN_COLUMN));
  for (let x = from; x <= to + 1; x++) {
    const low = x <= to && cover[x]! <= threshold;
    if (low && start < 0) start = x;
    if (!low && start >= 0) {
      if (x - start >= MIN_GUTTER) out.push({ x0: start, x1: x - 1 });
      start = -1;
    }
  }
  // a gutter needs real columns on both sides, not a bullet column, a stray label or the line
  // numbers of a code listing: pieces of text at least a few words wide
  const wide = text.filter((t) => t.x1 - t.x0 >= (strict ? Math.max(MIN_PIECE, (maxX - minX) * BAND_PIECE) : MIN_PIECE));
  return out.filter((g) => {
    const left = wide.filter((t) => t.x1 <= g.x0 + 1);
    const right = wide.filter((t) => t.x0 >= g.x1 - 1);
    if (left.length < 3 || right.length < 3) return false;
    if (!strict) return true;
    // what crosses the gutter lies above or below the stretch where the columns stand side by
    // side, never between their lines
    const top = Math.max(boxOf(left).y0, boxOf(right).y0);
    const bottom = Math.min(boxOf(left).y1, boxOf(right).y1);
    return text.every((t) => !(t.x0 < g.x0 - 2 && t.x1 > g.x1 + 2) || t.y1 <= top + 1 || t.y0 >= bottom - 1);
  });
}

function monoShare(text: readonly Item[]): number {
  let mono = 0, all = 0;
  for (const it of text) {
    if (it.kind !== 'text') continue;
    for (const c of it.frag.chars) { all++; if (c.style & MONO) mono++; }
  }
  return all === 0 ? 0 : mono / all;
}

const byFragBaseThenX0 = (a: Item & { kind: 'text' }, b: Item & { kind: 'text' }): number => a.frag.base - b.frag.base || a.x0 - b.x0;

/** For each narrow piece of text, the text that follows it on its baseline within 2.5 em. */
function followers(items: readonly Item[]): Map<Item, Item> {
  type Text = Item & { kind: 'text' };
  const text = items.filter((i): i is Text => i.kind === 'text').sort(byFragBaseThenX0);
  const out = new Map<Item, Item>();
  let line: Text[] = [];
  const flush = (): void => {
    line.sort(byX0);
    for (let k = 0; k + 1 < line.length; k++) {
      const it = line[k]!, next = line[k + 1]!;
      if (it.x1 - it.x0 < MIN_PIECE && next.x0 >= it.x1 - 1 && next.x0 - it.x1 <= it.frag.size * 2.5) out.set(it, next);
    }
    line = [];
  };
  for (const it of text) {
    if (line.length > 0 && Math.abs(it.frag.base - line[0]!.frag.base) > it.frag.size * 0.35) flush();
    line.push(it);
  }
  flush();
  return out;
}

/** Sections of the page's items in reading order. */
export function readingOrder(items: readonly Item[], pageWidth: number): Item[][] {
  const gs = gutters(items, pageWidth);
  const sorted = [...items].sort(byY0ThenX0);
  if (gs.length > 0) return columnsOf(sorted, gs);
  return banded(sorted, pageWidth);
}

/** Stretches between full-width items, each in columns when it has them (see the header). */
function banded(sorted: Item[], pageWidth: number): Item[][] {
  const text = sorted.filter((i) => i.kind === 'text');
  if (text.length < 12) return sorted.length > 0 ? [sorted] : [];
  const all = boxOf(text);
  const span = all.x1 - all.x0;
  const bands: Item[][] = [];
  let band: Item[] = [];
  for (const it of sorted) {
    if (it.x1 - it.x0 < span * FULL_WIDTH) { band.push(it); continue; }
    if (band.length > 0) bands.push(band);
    bands.push([it]);
    band = [];
  }
  if (band.length > 0) bands.push(band);
  const sections: Item[][] = [];
  let plain: Item[] = [];
  for (const b of bands) {
    const gs = b.length >= 6 ? gutters(b, pageWidth, true) : [];
    if (gs.length === 0) { plain = plain.concat(b); continue; }
    // the short last line of a paragraph above the columns stays with it
    let k = 0;
    while (k < b.length && crosses(b[k]!, gs)) k++;
    plain = plain.concat(b.slice(0, k));
    if (plain.length > 0) { sections.push(plain); plain = []; }
    for (const section of columnsOf(b.slice(k), gs)) sections.push(section);
  }
  if (plain.length > 0) sections.push(plain);
  return sections;
}

const crosses = (it: Item, gs: readonly Gutter[]): boolean => gs.some((g) => it.x0 < g.x0 - 2 && it.x1 > g.x1 + 2);

/** The items of a page or band read column by column, cut where an item crosses a gutter. */
function columnsOf(sorted: readonly Item[], gs: readonly Gutter[]): Item[][] {
  const sections: Item[][] = [];
  // the column an item belongs to, by its centre; a narrow piece set just before text on its
  // baseline (a section number before its title) goes with that text, even in the gutter
  const byCentre = (x: Item): number => gs.filter((g) => g.x1 < (x.x0 + x.x1) / 2).length;
  const next = followers(sorted);
  const columnOf = (it: Item): number => {
    const after = next.get(it);
    return Math.max(byCentre(it), after ? byCentre(after) : 0);
  };
  let columns: Item[][] = gs.map(() => []).concat([[]]);
  let spanning: Item[] = [];
  const flushColumns = (): void => {
    for (const col of columns) if (col.length > 0) sections.push(col);
    columns = gs.map(() => []).concat([[]]);
  };
  for (const it of sorted) {
    if (crosses(it, gs)) {
      flushColumns();
      spanning.push(it);
      continue;
    }
    if (spanning.length > 0) { sections.push(spanning); spanning = []; }
    columns[columnOf(it)]!.push(it);
  }
  if (spanning.length > 0) sections.push(spanning);
  flushColumns();
  return sections;
}
