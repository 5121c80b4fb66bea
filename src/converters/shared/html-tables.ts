// Turndown rules that render HTML tables as GFM tables, for html-to-md.ts.
// turndown-plugin-gfm keeps a table without a header row as raw HTML and does not escape pipes;
// these rules always emit a GFM table: the <thead> row, or else the first row, is the header.
// Cells and rows are emitted with control-character separators that the table rule splits on
// (html-to-md strips those characters from the input, so they cannot come from the document).
// A table of a single cell is layout, not data: its content is passed through as blocks.
import type TurndownService from 'turndown';
import { widestRow } from './gfm-table.js';

/** The slice of the DOM (domino) these rules use. */
export interface DomNode {
  nodeType: number;
  nodeName: string;
  nodeValue: string | null;
  textContent: string | null;
  parentNode: DomNode | null;
  nextSibling: DomNode | null;
  childNodes: ArrayLike<DomNode>;
}
export interface DomElement extends DomNode {
  children: ArrayLike<DomElement>;
  getAttribute(name: string): string | null;
  setAttribute(name: string, value: string): void;
  removeAttribute(name: string): void;
  remove(): void;
}

const ROW = '\u001E';
const CELL = '\u001F';
const MAX_COLSPAN = 50;

function el(n: unknown): DomElement {
  return n as DomElement;
}

/** The rows of this table, not of tables nested in its cells. */
function rowsOf(table: DomElement): DomElement[] {
  const rows: DomElement[] = [];
  for (const child of Array.from(table.children)) {
    if (child.nodeName === 'TR') rows.push(child);
    else if (/^T(HEAD|BODY|FOOT)$/.test(child.nodeName)) {
      for (const r of Array.from(child.children)) if (r.nodeName === 'TR') rows.push(r);
    }
  }
  return rows;
}

function cellsOf(row: DomElement): DomElement[] {
  return Array.from(row.children).filter((c) => c.nodeName === 'TD' || c.nodeName === 'TH');
}

function tableOf(node: DomNode): DomElement | null {
  let n: DomNode | null = node.parentNode;
  while (n && n.nodeName !== 'TABLE') n = n.parentNode;
  return n ? el(n) : null;
}

function isLayout(table: DomElement | null): boolean {
  if (!table) return true;
  const rows = rowsOf(table);
  return rows.length <= 1 && (rows.length === 0 || cellsOf(rows[0]!).length <= 1);
}

function escapeCell(md: string): string {
  return md.trim().replace(/\|/g, '\\|').replace(/\s*\n+\s*/g, '<br>');
}

function render(rows: string[][]): string {
  const width = widestRow(rows, 1);
  const line = (cells: string[]): string => {
    const padded = Array.from({ length: width }, (_, i) => cells[i] ?? '');
    return `| ${padded.join(' | ')} |`;
  };
  const [header, ...body] = rows;
  return [line(header!), `|${' --- |'.repeat(width)}`, ...body.map(line)].join('\n');
}

export const tableRules: Record<string, TurndownService.Rule> = {
  tableCell: {
    filter: (node) => el(node).nodeName === 'TD' || el(node).nodeName === 'TH',
    replacement: (content, node) => {
      const cell = el(node);
      const row = cell.parentNode;
      if (isLayout(row ? tableOf(row) : null)) return `\n\n${content}\n\n`;
      const span = Math.min(MAX_COLSPAN, Math.max(1, Number.parseInt(cell.getAttribute('colspan') ?? '1', 10) || 1));
      return CELL + escapeCell(content) + CELL.repeat(span - 1);
    },
  },
  tableRow: {
    filter: 'tr',
    replacement: (content, node) => (isLayout(tableOf(el(node))) ? content : ROW + content),
  },
  tableSection: {
    filter: ['thead', 'tbody', 'tfoot'],
    replacement: (content) => content,
  },
  tableCaption: {
    filter: 'caption',
    replacement: (content) => `${content.trim()}\n\n`,
  },
  table: {
    filter: 'table',
    replacement: (content, node) => {
      if (isLayout(el(node))) return `\n\n${content}\n\n`;
      const at = content.indexOf(ROW);
      const caption = (at < 0 ? content : content.slice(0, at)).trim();
      const rows = content.slice(at < 0 ? content.length : at).split(ROW).slice(1)
        .map((r) => r.split(CELL).slice(1));
      if (rows.length === 0) return caption ? `\n\n${caption}\n\n` : '';
      return `\n\n${caption ? `${caption}\n\n` : ''}${render(rows)}\n\n`;
    },
  },
};
