// Reads one worksheet part of an .xlsx as its visible, non-empty cells, streaming its XML (sheets
// can be hundreds of MB): cells in hidden rows and columns are left out (and the rows and columns
// that held something are reported), merged ranges and hyperlinks are kept with the cells.
// Past a cell budget the rest of the sheet is only counted, so a caller can say what was cut.
import type { ZipArchive } from '../shared/zip-limits.js';
import { readRels } from './ooxml.js';
import { cellText, type Book } from './xlsx-book.js';
import { contentUntil, runText, scanPart } from './xml-scan.js';

const CELL = `<(?:\\w+:)?c\\b([^<>]*?)(?:\\/>|>${contentUntil('c')}<\\/(?:\\w+:)?c>)`;
const SHEET_RE = new RegExp(
  `<(?:\\w+:)?row\\b([^<>]*)>|${CELL}|<(?:\\w+:)?mergeCell\\b([^<>]*)>|<(?:\\w+:)?hyperlink\\b([^<>]*)>|<(?:\\w+:)?col\\b([^<>]*)>`, 'g');
const CELL_RE = new RegExp(CELL, 'g');
const V_RE = /<(?:\w+:)?v(?:\s[^<>]*)?>([^<]*)<\/(?:\w+:)?v>/;
const IS_RE = /<(?:\w+:)?is[\s>]/;
const ATTR_RE = /([\w:]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

/** XFD, the last column Excel has; parseRef reads up to ZZZ. */
const MAX_COL = 18_278;

function attrs(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of s.matchAll(ATTR_RE)) out[m[1]!] = m[2] ?? m[3] ?? '';
  return out;
}

const isTrue = (v: string | undefined): boolean => v === '1' || v === 'true';

/** "AB12" → { row: 12, col: 28 } (both 1-based); null for anything else. */
export function parseRef(ref: string): { row: number; col: number } | null {
  const m = /^\$?([A-Za-z]{1,3})\$?(\d{1,7})$/.exec(ref.trim());
  if (!m) return null;
  let col = 0;
  for (const ch of m[1]!.toUpperCase()) col = col * 26 + (ch.charCodeAt(0) - 64);
  return { row: Number(m[2]), col };
}

/** 28 → "AB". */
export function columnName(col: number): string {
  let s = '';
  for (let n = col; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(65 + ((n - 1) % 26)) + s;
  return s;
}

/** A key for a cell position, unique across the sheet. */
export const cellKey = (row: number, col: number): number => row * (MAX_COL + 1) + col;

export interface Range { r0: number; c0: number; r1: number; c1: number }

export interface SheetCells {
  /** Parallel arrays, one entry per visible non-empty cell, in row-major order. */
  rows: number[];
  cols: number[];
  texts: string[];
  /** Merged ranges whose first cell holds something shown. */
  merges: Range[];
  /** Hidden rows and columns that held cells with content, in order. */
  hiddenRows: number[];
  hiddenCols: number[];
  /** Whether a row or column is hidden at all (content or not): no gap between blocks. */
  isHidden: { rows: Set<number>; cols: Uint8Array };
  /** Set when the budget ran out: the rows after `afterRow` were counted, not read. */
  cut?: { afterRow: number; lastRow: number; cells: number };
}

/** The cells a caller may still read (`left`, spent as cells are kept) out of `limit`. */
export interface CellBudget { left: number; readonly limit: number }

const isLinkable = (url: string): boolean => /^(https?:|mailto:)/i.test(url);

const hasValue = (inner: string): boolean => {
  const v = V_RE.exec(inner)?.[1];
  return (v !== undefined && v.trim() !== '') || (IS_RE.test(inner) && runText(inner).trim() !== '');
};

export async function readSheetCells(zip: ZipArchive, book: Book, part: string, budget: CellBudget, signal?: AbortSignal): Promise<SheetCells> {
  const hiddenCol = new Uint8Array(MAX_COL + 2);
  const hiddenRow = new Set<number>();
  const out: SheetCells = { rows: [], cols: [], texts: [], merges: [], hiddenRows: [], hiddenCols: [], isHidden: { rows: hiddenRow, cols: hiddenCol } };
  const hiddenRowsSeen = new Set<number>();
  const hiddenColsSeen = new Set<number>();
  const merges: Range[] = [];
  const links: Array<{ ref: string; id: string }> = [];
  let ordered = true;
  let lastKey = -1;

  let rowNo = 0;
  let colNo = 0;
  let rowHidden = false;
  for await (const m of scanPart(zip, part, SHEET_RE, signal)) {
    if (m[1] !== undefined) {
      const a = attrs(m[1]);
      const r = Number(a.r);
      rowNo = Number.isInteger(r) && r > 0 ? r : rowNo + 1;
      colNo = 0;
      rowHidden = isTrue(a.hidden);
      if (rowHidden) hiddenRow.add(rowNo);
      if (!out.cut && budget.left <= 0) out.cut = { afterRow: rowNo - 1, lastRow: rowNo - 1, cells: 0 };
    } else if (m[2] !== undefined) {
      const a = attrs(m[2]);
      const ref = a.r ? parseRef(a.r) : null;
      const [r, c] = ref ? [ref.row, ref.col] : [Math.max(rowNo, 1), colNo + 1];
      colNo = c;
      const inner = m[3] ?? '';
      if (out.cut) {
        if (hasValue(inner)) {
          out.cut.cells++;
          out.cut.lastRow = Math.max(out.cut.lastRow, r);
        }
        continue;
      }
      if (rowHidden || hiddenCol[c] === 1) {
        if (hasValue(inner)) (rowHidden ? hiddenRowsSeen.add(r) : hiddenColsSeen.add(c));
        continue;
      }
      const inline = IS_RE.test(inner) ? runText(inner) : undefined;
      const text = cellText(book, a.t, V_RE.exec(inner)?.[1], inline, Number(a.s ?? 0)).trim();
      if (text === '') continue;
      const key = cellKey(r, c);
      if (key <= lastKey) ordered = false;
      lastKey = key;
      out.rows.push(r);
      out.cols.push(c);
      out.texts.push(text);
      budget.left--;
    } else if (m[4] !== undefined) {
      const [from, to] = (attrs(m[4]).ref ?? '').split(':').map(parseRef);
      if (from && to) merges.push({ r0: Math.min(from.row, to.row), c0: Math.min(from.col, to.col), r1: Math.max(from.row, to.row), c1: Math.max(from.col, to.col) });
    } else if (m[5] !== undefined) {
      const a = attrs(m[5]);
      if (a.ref && a['r:id']) links.push({ ref: a.ref.split(':')[0]!, id: a['r:id'] });
    } else if (m[6] !== undefined) {
      const a = attrs(m[6]);
      if (isTrue(a.hidden)) {
        const [min, max] = [Number(a.min), Number(a.max)];
        if (Number.isInteger(min) && Number.isInteger(max)) hiddenCol.fill(1, Math.max(1, min), Math.min(MAX_COL, max) + 1);
      }
    }
  }

  if (!ordered) sortCells(out);
  if (links.length > 0) {
    const rels = await readRels(zip, part);
    for (const { ref, id } of links) {
      const at = parseRef(ref);
      const url = rels.get(id)?.target;
      const i = at ? cellIndex(out, at.row, at.col) : undefined;
      const text = i === undefined ? undefined : out.texts[i];
      if (i !== undefined && text && url && isLinkable(url) && text !== url) {
        out.texts[i] = `[${text.replace(/([[\]])/g, '\\$1')}](${url.replace(/[ ()]/g, encodeURIComponent)})`;
      }
    }
  }
  out.merges = merges.filter((g) => cellIndex(out, g.r0, g.c0) !== undefined && (g.r1 > g.r0 || g.c1 > g.c0));
  out.hiddenRows = [...hiddenRowsSeen].sort((a, b) => a - b);
  out.hiddenCols = [...hiddenColsSeen].sort((a, b) => a - b);
  return out;
}

/** Puts cells written out of order (never by Excel, but possible) into row-major order; of a
 *  cell written twice, the last one stays. */
function sortCells(cells: SheetCells): void {
  const key = (i: number): number => cellKey(cells.rows[i]!, cells.cols[i]!);
  const order = cells.rows.map((_, i) => i).sort((a, b) => key(a) - key(b) || a - b);
  const kept = order.filter((i, k) => k + 1 === order.length || key(order[k + 1]!) !== key(i));
  [cells.rows, cells.cols, cells.texts] = [kept.map((i) => cells.rows[i]!), kept.map((i) => cells.cols[i]!), kept.map((i) => cells.texts[i]!)];
}

/** The index of the cell at row, col in the sheet's arrays (a binary search: they are in
 *  row-major order), or undefined when that cell is empty. */
export function cellIndex(cells: SheetCells, row: number, col: number): number | undefined {
  const want = cellKey(row, col);
  let [lo, hi] = [0, cells.rows.length];
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cellKey(cells.rows[mid]!, cells.cols[mid]!) < want) lo = mid + 1;
    else hi = mid;
  }
  return lo < cells.rows.length && cells.rows[lo] === row && cells.cols[lo] === col ? lo : undefined;
}

/** Non-empty cells of a sheet, without resolving any value. */
export async function countSheetCells(zip: ZipArchive, part: string, signal?: AbortSignal): Promise<number> {
  let n = 0;
  for await (const m of scanPart(zip, part, CELL_RE, signal)) if (hasValue(m[2] ?? '')) n++;
  return n;
}
