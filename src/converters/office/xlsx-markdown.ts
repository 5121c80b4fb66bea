// One sheet of a workbook as Markdown, as the sheet shows: `## <sheet name>`, a comment line
// naming the hidden rows and columns left out, then each block of cells (xlsx-blocks.ts) in
// reading order — a lone cell as a line of text (so is a title merged across the table under it),
// anything larger as a GFM table whose first row is the header — each followed by the comments
// on its cells with their authors. A hidden sheet is one comment line; a chart sheet its charts'
// data. Cells past the workbook's cell budget are cut, and a comment line says which rows were.
import { gfmTable } from '../shared/gfm-table.js';
import type { ZipArchive } from '../shared/zip-limits.js';
import { readRels } from './ooxml.js';
import { blockGrid, checkBlockSizes, mergesByFirstCell, splitBlocks, type Block } from './xlsx-blocks.js';
import type { Book, SheetRef } from './xlsx-book.js';
import { chartSheetMarkdown } from './xlsx-charts.js';
import { readComments, type SheetComment } from './xlsx-comments.js';
import { cellIndex, cellKey, columnName, readSheetCells, type CellBudget } from './xlsx-sheet.js';

/** Comments on empty cells are placed in the block around them; past this many area checks
 *  per sheet they go after the sheet's last block instead. */
const PLACEMENT_CHECKS = 1_000_000;
const LISTED_RANGES = 20;

const count = (n: number): string => n.toLocaleString('en-US');

/** Text safe inside an HTML comment. */
const commentSafe = (s: string): string => s.replace(/-{2,}/g, '-').replace(/[<>]/g, '').replace(/\s+/g, ' ').trim();

/** "4, 7–9, 12" from sorted numbers, at most LISTED_RANGES ranges. */
function ranges(ns: number[], name: (n: number) => string): string {
  const out: string[] = [];
  for (let i = 0; i < ns.length;) {
    let j = i;
    while (j + 1 < ns.length && ns[j + 1] === ns[j]! + 1) j++;
    out.push(i === j ? name(ns[i]!) : `${name(ns[i]!)}–${name(ns[j]!)}`);
    i = j + 1;
  }
  return out.length > LISTED_RANGES ? `${out.slice(0, LISTED_RANGES).join(', ')} and ${out.length - LISTED_RANGES} more` : out.join(', ');
}

/** A cell's text as a paragraph of its own: line breaks kept, no accidental heading or list. */
function lineOf(text: string): string {
  return text
    .split('\n')
    .map((l) => l.trim().replace(/^([#>+\-=*_~`|])/, '\\$1').replace(/^(\d+)([.)])(?=\s|$)/, '$1\\$2'))
    .filter(Boolean)
    .join('\\\n');
}

function commentList(comments: SheetComment[]): string {
  const item = (who: string, text: string, indent: string): string =>
    `${indent}- ${who}${text.split('\n').map((l) => l.trim()).filter(Boolean).join(`\n${indent}  `)}`;
  const lines = comments.map((c) => [
    item(`${c.ref}${c.author ? ` (${c.author})` : ''}: `, c.text, ''),
    ...c.replies.map((r) => item(r.author ? `${r.author}: ` : '', r.text, '  ')),
  ].join('\n'));
  return `**Comments:**\n${lines.join('\n')}`;
}

export async function sheetMarkdown(zip: ZipArchive, book: Book, sheet: SheetRef, budget: CellBudget, signal?: AbortSignal): Promise<string> {
  const name = sheet.name.replace(/\s+/g, ' ').trim();
  if (sheet.hidden) return `<!-- sheet "${commentSafe(name)}" skipped: hidden -->`;
  const heading = `## ${name}`;
  if (sheet.kind === 'chartsheet' && sheet.part) {
    const charts = await chartSheetMarkdown(zip, sheet.part);
    return [heading, ...(charts.length > 0 ? charts : ['*(chart sheet)*'])].join('\n\n');
  }
  if (sheet.kind !== 'worksheet' || !sheet.part) return `${heading}\n\n*(empty sheet)*`;

  const cells = await readSheetCells(zip, book, sheet.part, budget, signal);
  const comments = await readComments(zip, book, await readRels(zip, sheet.part));
  const blocks = splitBlocks(cells);
  const merges = mergesByFirstCell(cells);
  checkBlockSizes(cells, blocks);

  // Each comment goes after the block holding its cell (or, on an empty cell, the block around it).
  const blockOf = new Int32Array(cells.rows.length);
  blocks.forEach((b, k) => { for (const i of b.cells) blockOf[i] = k; });
  const commentsOf: SheetComment[][] = blocks.map(() => []);
  const loose: SheetComment[] = [];
  let checks = PLACEMENT_CHECKS;
  const around = (c: SheetComment): number => {
    const inside = (b: Block): boolean => c.row >= b.area.r0 && c.row <= b.area.r1 && c.col >= b.area.c0 && c.col <= b.area.c1;
    for (let k = 0; k < blocks.length && checks-- > 0; k++) if (inside(blocks[k]!)) return k;
    return -1;
  };
  for (const c of comments) {
    if (cells.isHidden.rows.has(c.row) || cells.isHidden.cols[c.col] === 1) continue;
    const i = cellIndex(cells, c.row, c.col);
    const k = i === undefined ? around(c) : blockOf[i]!;
    (k >= 0 ? commentsOf[k]! : loose).push(c);
  }

  const parts = [heading];
  const hidden: string[] = [];
  if (cells.hiddenRows.length > 0) hidden.push(`${cells.hiddenRows.length === 1 ? 'row' : 'rows'} ${ranges(cells.hiddenRows, String)}`);
  if (cells.hiddenCols.length > 0) hidden.push(`${cells.hiddenCols.length === 1 ? 'column' : 'columns'} ${ranges(cells.hiddenCols, columnName)}`);
  if (hidden.length > 0) parts.push(`<!-- hidden ${hidden.join(' and ')} skipped -->`);
  for (const [k, whole] of blocks.entries()) {
    signal?.throwIfAborted();
    let block = whole;
    // A title merged across the table under it, alone on its row, is a line, not the header.
    const [first, second] = block.cells;
    const title = first === undefined ? undefined : merges.get(cellKey(cells.rows[first]!, cells.cols[first]!));
    if (title && title.c1 > title.c0 && second !== undefined && cells.rows[second] !== cells.rows[first]) {
      parts.push(lineOf(cells.texts[first!]!));
      block = { cells: block.cells.slice(1), area: block.area };
    }
    parts.push(block.cells.length === 1 ? lineOf(cells.texts[block.cells[0]!]!) : gfmTable(blockGrid(cells, block, merges)));
    if (commentsOf[k]!.length > 0) parts.push(commentList(commentsOf[k]!));
  }
  if (loose.length > 0) parts.push(commentList(loose));
  if (cells.cut && cells.cut.cells > 0) {
    const { afterRow, lastRow } = cells.cut;
    const rows = afterRow + 1 === lastRow ? `row ${count(lastRow)}` : `rows ${count(afterRow + 1)}–${count(lastRow)}`;
    parts.push(`<!-- cut: ${rows} of this sheet (${count(cells.cut.cells)} cells) not converted; a workbook converts at most ${count(budget.limit)} cells -->`);
  }
  if (parts.length === 1) parts.push('*(empty sheet)*');
  return parts.join('\n\n');
}
