// Splits a sheet's cells into blocks, the way a reader sees them: a title cell, a table further
// down, a second table to its right are separate wherever whole empty rows or columns lie
// between them (cut recursively: rows, then columns within each band, and so on). A merged
// range counts as filled over its whole area; hidden rows and columns are no gap, as they do
// not show. Blocks come in reading order (top to bottom, then left to right), each as a grid
// without empty rows or columns.
//
// Merged cells in a grid: the value stays in the range's first cell and is repeated down the
// rows of the range in its first column where those rows hold other data; the range's other
// columns stay empty. A label spanning a group of rows so stays on every row it labels, while a
// title spread across columns is not copied into each of them.
import { ApiError } from '../../errors.js';
import { checkTableSize, MAX_TABLE_CELLS } from '../shared/gfm-table.js';
import { cellIndex, cellKey, type Range, type SheetCells } from './xlsx-sheet.js';

export interface Block {
  /** Indexes into the sheet's cell arrays, in row-major order. */
  cells: number[];
  /** The block's area: its cells and merged ranges. */
  area: Range;
}

/** Cutting work allowed per cell; a real sheet needs a few passes, a contrived one is left
 *  in larger blocks rather than cut quadratically. */
const WORK_PER_CELL = 16;

/** Counts of hidden rows and columns, to tell whether the empty lines between two cells show. */
function gapFinders(sheet: SheetCells): { rowGap: (end: number, next: number) => boolean; colGap: (end: number, next: number) => boolean } {
  const hiddenRows = [...sheet.isHidden.rows].sort((a, b) => a - b);
  const rowsHiddenBefore = (row: number): number => {
    let [lo, hi] = [0, hiddenRows.length];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (hiddenRows[mid]! < row) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const flags = sheet.isHidden.cols;
  const colsHiddenBefore = new Int32Array(flags.length + 1);
  for (let c = 0; c < flags.length; c++) colsHiddenBefore[c + 1] = colsHiddenBefore[c]! + flags[c]!;
  const last = flags.length;
  return {
    rowGap: (end, next) => next > end + 1 && next - end - 1 > rowsHiddenBefore(next) - rowsHiddenBefore(end + 1),
    colGap: (end, next) => next > end + 1
      && next - end - 1 > colsHiddenBefore[Math.min(next, last)]! - colsHiddenBefore[Math.min(end + 1, last)]!,
  };
}

/** The blocks of a sheet in reading order. */
export function splitBlocks(sheet: SheetCells): Block[] {
  const n = sheet.rows.length;
  if (n === 0) return [];
  const { rows, cols } = sheet;
  // Each cell's extent: itself, or the whole merged range it starts.
  const r1 = Int32Array.from(rows);
  const c1 = Int32Array.from(cols);
  for (const g of sheet.merges) {
    const i = cellIndex(sheet, g.r0, g.c0);
    if (i !== undefined) [r1[i], c1[i]] = [g.r1, g.c1];
  }
  const { rowGap, colGap } = gapFinders(sheet);
  const groupOf = new Int32Array(n);

  /** Groups split at empty rows; the cells are in row-major order, so sorted by first row. */
  const byRows = (cells: number[]): number[][] => {
    const groups: number[][] = [[]];
    let end = rows[cells[0]!]!;
    for (const i of cells) {
      if (rowGap(end, rows[i]!)) groups.push([]);
      groups[groups.length - 1]!.push(i);
      end = Math.max(end, r1[i]!);
    }
    return groups;
  };
  /** Groups split at empty columns, left to right, each kept in row-major order. */
  const byCols = (cells: number[]): number[][] => {
    let [lo, hi] = [Infinity, -Infinity];
    for (const i of cells) [lo, hi] = [Math.min(lo, cols[i]!), Math.max(hi, c1[i]!)];
    let g = 0;
    if (hi - lo <= 4 * cells.length) {
      // Few columns for many cells (the usual table): mark the columns each cell covers.
      const cover = new Int32Array(hi - lo + 2);
      for (const i of cells) {
        cover[cols[i]! - lo]!++;
        cover[c1[i]! - lo + 1]!--;
      }
      const groupAt = new Int32Array(hi - lo + 1);
      let [open, end] = [0, -Infinity];
      for (let c = lo; c <= hi; c++) {
        open += cover[c - lo]!;
        if (open > 0) {
          if (end !== -Infinity && colGap(end, c)) g++;
          end = c;
        }
        groupAt[c - lo] = g;
      }
      for (const i of cells) groupOf[i] = groupAt[cols[i]! - lo]!;
    } else {
      const sorted = [...cells].sort((a, b) => cols[a]! - cols[b]!);
      let end = cols[sorted[0]!]!;
      for (const i of sorted) {
        if (colGap(end, cols[i]!)) g++;
        groupOf[i] = g;
        end = Math.max(end, c1[i]!);
      }
    }
    const groups: number[][] = Array.from({ length: g + 1 }, () => []);
    for (const i of cells) groups[groupOf[i]!]!.push(i);
    return groups;
  };
  const area = (cells: number[]): Range => {
    const box = { r0: rows[cells[0]!]!, c0: Infinity, r1: -Infinity, c1: -Infinity };
    for (const i of cells) {
      box.c0 = Math.min(box.c0, cols[i]!);
      box.r1 = Math.max(box.r1, r1[i]!);
      box.c1 = Math.max(box.c1, c1[i]!);
    }
    return box;
  };

  const blocks: Block[] = [];
  let work = WORK_PER_CELL * n;
  // Depth-first, so blocks come out in reading order; a stack, as contrived sheets cut deep.
  const stack: Array<{ cells: number[]; tried: 'rows' | 'cols' | 'none' }> = [{ cells: Array.from({ length: n }, (_, i) => i), tried: 'none' }];
  while (stack.length > 0) {
    const { cells, tried } = stack.pop()!;
    if (cells.length === 1 || work <= 0) {
      blocks.push({ cells, area: area(cells) });
      continue;
    }
    work -= cells.length;
    // A group just cut at every empty row has none left inside; likewise for columns.
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

/** The distinct columns of a block, in order. */
function columnsOf(sheet: SheetCells, block: Block): number[] {
  return [...new Set(block.cells.map((i) => sheet.cols[i]!))].sort((a, b) => a - b);
}

function rowCount(sheet: SheetCells, block: Block): number {
  let n = 0;
  for (let k = 0; k < block.cells.length; k++) if (k === 0 || sheet.rows[block.cells[k]!] !== sheet.rows[block.cells[k - 1]!]) n++;
  return n;
}

/**
 * Refuses a sheet whose tables would be too large, before any is built: each within
 * MAX_TABLE_CELLS, empty cells included, and all of them together too. Blocks have disjoint
 * areas, so a sheet within the limit as one table stays within it as several, and many sparse
 * blocks cannot add up to more than one sparse table could.
 */
export function checkBlockSizes(sheet: SheetCells, blocks: Block[]): void {
  let total = 0;
  for (const block of blocks) {
    if (block.cells.length === 1) continue;
    const [rows, cols] = [rowCount(sheet, block), columnsOf(sheet, block).length];
    checkTableSize(rows, cols, 'the sheet');
    total += rows * cols;
  }
  if (total > MAX_TABLE_CELLS) {
    throw new ApiError('invalid_document', `the sheet's blocks of cells span ${total} cells together, empty ones included; `
      + `its tables can have at most ${MAX_TABLE_CELLS} cells.`);
  }
}

/** A block as rows of cell text, without empty rows or columns. */
export function blockGrid(sheet: SheetCells, block: Block, merges: Map<number, Range>): string[][] {
  const cols = columnsOf(sheet, block);
  const colIndex = new Map(cols.map((c, j) => [c, j]));
  const grid: string[][] = [];
  const rowsDown: number[] = [];
  for (const i of block.cells) {
    const [r, c] = [sheet.rows[i]!, sheet.cols[i]!];
    if (rowsDown[rowsDown.length - 1] !== r) {
      rowsDown.push(r);
      grid.push(new Array<string>(cols.length).fill(''));
    }
    const top = grid.length - 1;
    const j = colIndex.get(c)!;
    grid[top]![j] = sheet.texts[i]!;
  }
  // Now that every row is known: merged values down their first column. Ranges that overlap
  // (Excel writes none) must not fill the same rows twice over.
  const filledTo = new Int32Array(cols.length).fill(-1);
  for (let top = 0, k = 0; top < grid.length; top++) {
    for (; k < block.cells.length && sheet.rows[block.cells[k]!] === rowsDown[top]; k++) {
      const i = block.cells[k]!;
      const g = merges.get(cellKey(sheet.rows[i]!, sheet.cols[i]!));
      if (!g || g.r1 === g.r0) continue;
      const j = colIndex.get(sheet.cols[i]!)!;
      let down = Math.max(top + 1, filledTo[j]! + 1);
      for (; down < grid.length && rowsDown[down]! <= g.r1; down++) if (grid[down]![j] === '') grid[down]![j] = sheet.texts[i]!;
      filledTo[j] = Math.max(filledTo[j]!, down - 1);
    }
  }
  return grid;
}
