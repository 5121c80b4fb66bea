// Renders rows of cell text as one GFM table. Every converter that finds a table (Excel sheets,
// PowerPoint tables, PDF grids) goes through here, so escaping is the same everywhere.
import { ApiError } from '../../errors.js';

/**
 * Most cells (rows × columns, empty ones included) one table may have. A sparse sheet or CSV
 * (a few cells far apart, or on a diagonal) is small on disk but dense as a table: without a
 * cap, 20,000 diagonal cells would make a 400-million-cell table.
 */
export const MAX_TABLE_CELLS = 20_000_000;

/** Throws invalid_document when a rows × columns table would be over MAX_TABLE_CELLS. */
export function checkTableSize(rows: number, cols: number, what: string): void {
  if (rows * cols > MAX_TABLE_CELLS) {
    throw new ApiError('invalid_document', `${what} spans ${rows} rows × ${cols} columns (${rows * cols} cells); `
      + `a table can have at most ${MAX_TABLE_CELLS} cells, empty ones included.`);
  }
}

/** The longest row's length (never Math.max(...rows): that overflows the stack past ~100k rows). */
export function widestRow(rows: readonly (readonly unknown[])[], least = 0): number {
  let width = least;
  for (const r of rows) if (r.length > width) width = r.length;
  return width;
}

/** Escapes one cell: pipes and backslashes that would end a cell, newlines as <br>. */
export function escapeCell(text: string): string {
  return text
    .replace(/\\/g, '\\\\')
    .replace(/\|/g, '\\|')
    .replace(/\r\n?|\n/g, '<br>')
    .replace(/\s+$/g, '')
    .replace(/^\s+/g, '');
}

/** Escapes one cell that is Markdown already (converters' inline text): only what would end the
 *  cell, pipes and newlines. */
export function escapeMarkdownCell(md: string): string {
  return md.replace(/\|/g, '\\|').replace(/\r\n?|\n/g, '<br>').trim();
}

/**
 * The first row is the header. Rows are padded to the widest row; an empty input gives ''.
 * `escape` makes one cell's text (escapeCell for plain text, escapeMarkdownCell for Markdown).
 */
export function gfmTable(rows: readonly (readonly string[])[], escape: (text: string) => string = escapeCell): string {
  if (rows.length === 0) return '';
  const width = widestRow(rows, 1);
  const line = (cells: readonly string[]): string => {
    const out: string[] = [];
    for (let i = 0; i < width; i++) out.push(escape(cells[i] ?? ''));
    return `| ${out.join(' | ')} |`;
  };
  const [header, ...body] = rows;
  const lines = [line(header!), `|${' --- |'.repeat(width)}`];
  for (const row of body) lines.push(line(row));
  return lines.join('\n');
}
