// What the Word converter changes in mammoth's document tree before it becomes HTML, in one walk
// of the body and the notes:
// - checkboxes (content controls and legacy form fields) become the text ☒ or ☐ (as HTML
//   inputs they would vanish in turndown);
// - a cell covered by a vertical merge becomes an empty cell at its grid column: mammoth keeps
//   only the merge's first cell (with a rowspan), and html-to-md, which reads no rowspans, would
//   shift the rest of the row left. The merged text stays once, in the first cell;
// - a table nested in a cell of a real table (more than one cell) becomes one paragraph per row,
//   its cells' text separated by "; ": GFM cells hold no tables. A table inside a one-cell layout
//   table stays a table, as html-to-md passes that cell through as blocks.
// mammoth's element shapes are plain objects ({ type, children, … }); new ones copy that shape.

interface Element {
  type: string;
  children?: Element[];
  [key: string]: unknown;
}

interface Cell extends Element {
  colSpan: number;
  rowSpan: number;
}

const text = (value: string): Element => ({ type: 'text', value });
const paragraph = (children: Element[]): Element => ({
  type: 'paragraph', children, styleId: null, styleName: null, numbering: null, alignment: null,
  indent: { start: null, end: null, firstLine: null, hanging: null },
});
const emptyCell = (colSpan: number): Cell => ({ type: 'tableCell', children: [], colSpan, rowSpan: 1 });

const rowsOf = (table: Element): Element[] => (table.children ?? []).filter((r) => r.type === 'tableRow');

/** A table of at most one row of at most one cell frames content; it holds no data. */
function isLayout(table: Element): boolean {
  const rows = rowsOf(table);
  return rows.length <= 1 && (rows.length === 0 || (rows[0]!.children ?? []).length <= 1);
}

/** Puts an empty cell wherever a row-spanning cell of a row above covers the grid. */
function layOutRowSpans(table: Element): void {
  let covering = new Map<number, { colSpan: number; left: number }>();
  for (const row of rowsOf(table)) {
    const out: Element[] = [];
    const next = new Map<number, { colSpan: number; left: number }>();
    let col = 0;
    const cover = (at: number): void => {
      const c = covering.get(at)!;
      covering.delete(at);
      out.push(emptyCell(c.colSpan));
      if (c.left > 1) next.set(at, { colSpan: c.colSpan, left: c.left - 1 });
      col = at + c.colSpan;
    };
    for (const raw of row.children ?? []) {
      while (covering.has(col)) cover(col);
      const cell = raw as Cell;
      const span = cell.type === 'tableCell' ? Math.max(1, cell.colSpan || 1) : 1;
      if (cell.type === 'tableCell' && cell.rowSpan > 1) {
        next.set(col, { colSpan: span, left: cell.rowSpan - 1 });
        cell.rowSpan = 1;
      }
      out.push(raw);
      col += span;
    }
    for (const at of [...covering.keys()].filter((k) => k >= col).sort((a, b) => a - b)) cover(at);
    row.children = out;
    covering = next;
  }
}

function hasContent(el: Element): boolean {
  if (el.type === 'text') return String(el.value ?? '').trim() !== '';
  if (el.type === 'image') return true;
  return (el.children ?? []).some(hasContent);
}

/** A nested table as paragraphs, a row each; its own nested tables are paragraphs already. */
function flatten(table: Element): Element[] {
  const out: Element[] = [];
  for (const row of rowsOf(table)) {
    const line: Element[] = [];
    for (const cell of row.children ?? []) {
      const inline: Element[] = [];
      for (const block of cell.children ?? []) {
        if (!hasContent(block)) continue;
        if (inline.length > 0) inline.push(text(' '));
        inline.push(...(block.type === 'paragraph' ? block.children ?? [] : [block]));
      }
      if (inline.length === 0) continue;
      if (line.length > 0) line.push(text('; '));
      line.push(...inline);
    }
    if (line.length > 0) out.push(paragraph(line));
  }
  return out;
}

/** `flattenTables`: this content is inside a cell of a real table. */
function walk(el: Element, flattenTables: boolean): void {
  const children = el.children;
  if (!children) return;
  for (let i = 0; i < children.length; i++) {
    const c = children[i]!;
    if (c.type === 'checkbox') {
      children[i] = text(c.checked ? '☒' : '☐');
    } else if (c.type === 'table') {
      walk(c, flattenTables || !isLayout(c));
      layOutRowSpans(c);
      if (flattenTables) {
        const paras = flatten(c);
        children.splice(i, 1, ...paras);
        i += paras.length - 1;
      }
    } else {
      walk(c, flattenTables);
    }
  }
}

/** mammoth's transformDocument: changes the tree in place and returns it. */
export function transformDocument(document: unknown): unknown {
  const doc = document as Element & { notes?: { _notes?: Record<string, { body?: Element[] }> } };
  walk(doc, false);
  for (const note of Object.values(doc.notes?._notes ?? {})) {
    if (note.body) walk({ type: 'note', children: note.body }, false);
  }
  return doc;
}
