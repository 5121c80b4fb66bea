// Splits a sheet's cells into blocks, the way a reader sees them: a title cell, a table further
// down, a second table to its right are separate wherever whole empty rows or columns lie
// between them (cut recursively: rows, then columns within each band, and so on). A merged
// range counts as filled over its whole area; hidden rows and columns are no gap, as they do
// not show. Blocks come in reading order (top to bottom, then
// left to right), each as a grid without empty rows or columns.
//
// Merged cells in a grid: the value stays in the range's first cell and is repeated down the
// rows of the range in its first column where those rows hold other data; the range's other
// columns stay empty. A label spanning a group of rows so stays on every row it labels, while a
// title spread across columns is not copied into each of them.
import { checkTableSize } from '../shared/gfm-table.js';
import { cellKey, type Range, type SheetCells } from './xlsx-sheet.js';

export interface Block {
  /** Indexes into the sheet's cell arrays, in row-major order. */
  cells: number[];
  /** The block's area: its cells and merged ranges. */
  area: Range;
}

/** Cutting work allowed per cell; a real sheet needs a few passes, a contrived one is left
 *  in larger blocks rather than cut quadratically. */
const WORK_PER_CELL = 16;

/** The blocks of a sheet in reading order. */
export function splitBlocks(sheet: SheetCells): Block[] {
  const n = sheet.rows.length;
  if (n === 0) return [];
  // Each cell's extent: itself, or the whole merged range it starts.
  const r1 = Int32Array.from(sheet.rows);
  const c1 = Int32Array.from(sheet.cols);
  const indexOf = new Map<number, number>();
  sheet.rows.forEach((r, i) => indexOf.set(cellKey(r, sheet.cols[i]!), i));
  for (const g of sheet.merges) {
    const i = indexOf.get(cellKey(g.r0, g.c0));
    if (i !== undefined) [r1[i], c1[i]] = [g.r1, g.c1];
  }
  const area = (cells: number[]): Range => {
    const box = { r0: Infinity, c0: Infinity, r1: -Infinity, c1: -Infinity };
    for (const i of cells) {
      box.r0 = Math.min(box.r0, sheet.rows[i]!);
      box.c0 = Math.min(box.c0, sheet.cols[i]!);
      box.r1 = Math.max(box.r1, r1[i]!);
      box.c1 = Math.max(box.c1, c1[i]!);
    }
    return box;
  };

  // Hidden rows and columns before each position, to tell whether a gap shows.
  const hiddenRows = [...sheet.isHidden.rows].sort((a, b) => a - b);
  const hiddenBefore = (row: number): number => {
    let [lo, hi] = [0, hiddenRows.length];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (hiddenRows[mid]! < row) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const colsHiddenBefore = new Int32Array(sheet.isHidden.cols.length + 1);
  sheet.isHidden.cols.forEach((h, c) => { colsHiddenBefore[c + 1] = colsHiddenBefore[c]! + h; });
  const colGap = (end: number, next: number): boolean =>
    end === -Infinity || (next > end + 1 && next - end - 1 > colsHiddenBefore[Math.min(next, colsHiddenBefore.length - 1)]! - colsHiddenBefore[Math.min(end + 1, colsHiddenBefore.length - 1)]!);
  const rowGap = (end: number, next: number): boolean =>
    end === -Infinity || (next > end + 1 && next - end - 1 > hiddenBefore(next) - hiddenBefore(end + 1));

  /** Groups split at empty rows; the cells are in row-major order, so sorted by first row. */
  const byRows = (cells: number[]): number[][] => {
    const groups: number[][] = [];
    let end = -Infinity;
    for (const i of cells) {
      if (rowGap(end, sheet.rows[i]!)) groups.push([]);
      groups[groups.length - 1]!.push(i);
      end = Math.max(end, r1[i]!);
    }
    return groups;
  };
  /** Groups split at empty columns, left to right, each kept in row-major order. */
  const byCols = (cells: number[]): number[][] => {
    const sorted = [...cells].sort((a, b) => sheet.cols[a]! - sheet.cols[b]!);
    const groupOf = new Map<number, number>();
    let end = -Infinity;
    let g = -1;
    for (const i of sorted) {
      if (colGap(end, sheet.cols[i]!)) g++;
      groupOf.set(i, g);
      end = Math.max(end, c1[i]!);
    }
    const groups: number[][] = Array.from({ length: g + 1 }, () => []);
    for (const i of cells) groups[groupOf.get(i)!]!.push(i);
    return groups;
  };

  const blocks: Block[] = [];
  let work = WORK_PER_CELL * n;
  // Depth-first, so blocks come out in reading order; a stack, as contrived sheets cut deep.
  const stack: Array<{ cells: number[]; tried: 'rows' | 'cols' | 'none' }> = [{ cells: [...sheet.rows.keys()], tried: 'none' }];
  while (stack.length > 0) {
    const { cells, tried } = stack.pop()!;
    if (cells.length === 1 || work <= 0) {
      blocks.push({ cells, area: area(cells) });
      continue;
    }
    work -= cells.length;
    let groups = tried === 'rows' ? [cells] : byRows(cells);
    let cut: 'rows' | 'cols' = 'rows';
    if (groups.length === 1 && tried !== 'cols') {
      groups = byCols(cells);
      cut = 'cols';
    }
    if (groups.length === 1) {
      blocks.push({ cells, area: area(cells) });
      continue;
    }
    for (let k = groups.length - 1; k >= 0; k--) stack.push({ cells: groups[k]!, tried: cut });
  }
  return blocks;
}

/** Merged ranges by the key of their first cell. */
export function mergesByFirstCell(sheet: SheetCells): Map<number, Range> {
  return new Map(sheet.merges.map((g) => [cellKey(g.r0, g.c0), g]));
}

/** A block as rows of cell text, without empty rows or columns. */
export function blockGrid(sheet: SheetCells, block: Block, merges: Map<number, Range>): string[][] {
  const rowIndex = new Map<number, number>();
  const colSet = new Set<number>();
  for (const i of block.cells) {
    if (!rowIndex.has(sheet.rows[i]!)) rowIndex.set(sheet.rows[i]!, rowIndex.size);
    colSet.add(sheet.cols[i]!);
  }
  const cols = [...colSet].sort((a, b) => a - b);
  const colIndex = new Map(cols.map((c, j) => [c, j]));
  checkTableSize(rowIndex.size, cols.length, 'the sheet');
  const grid = Array.from({ length: rowIndex.size }, () => new Array<string>(cols.length).fill(''));
  const rowsDown = [...rowIndex.keys()];
  const filledTo = new Int32Array(cols.length).fill(-1);
  for (const i of block.cells) {
    const [r, c] = [sheet.rows[i]!, sheet.cols[i]!];
    const [top, j] = [rowIndex.get(r)!, colIndex.get(c)!];
    grid[top]![j] = sheet.texts[i]!;
    const g = merges.get(cellKey(r, c));
    if (!g) continue;
    // Ranges that overlap (Excel writes none) must not fill the same rows twice over.
    let k = Math.max(top + 1, filledTo[j]! + 1);
    for (; k < rowsDown.length && rowsDown[k]! <= g.r1; k++) if (grid[k]![j] === '') grid[k]![j] = sheet.texts[i]!;
    filledTo[j] = Math.max(filledTo[j]!, k - 1);
  }
  return grid;
}
