// Renders rows of cell text as one GFM table. Every converter that finds a table (Excel sheets,
// PowerPoint tables, PDF grids) goes through here, so escaping is the same everywhere.

/** Escapes one cell: pipes and backslashes that would end a cell, newlines as <br>. */
export function escapeCell(text: string): string {
  return text
    .replace(/\\/g, '\\\\')
    .replace(/\|/g, '\\|')
    .replace(/\r\n?|\n/g, '<br>')
    .replace(/\s+$/g, '')
    .replace(/^\s+/g, '');
}

/**
 * The first row is the header. Rows are padded to the widest row; an empty input gives ''.
 */
export function gfmTable(rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return '';
  const width = Math.max(1, ...rows.map((r) => r.length));
  const line = (cells: readonly string[]): string => {
    const out: string[] = [];
    for (let i = 0; i < width; i++) out.push(escapeCell(cells[i] ?? ''));
    return `| ${out.join(' | ')} |`;
  };
  const [header, ...body] = rows;
  const lines = [line(header!), `|${' --- |'.repeat(width)}`];
  for (const row of body) lines.push(line(row));
  return lines.join('\n');
}
