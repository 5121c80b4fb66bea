// Reads one worksheet part of an .xlsx as a grid of cell texts, streaming its XML (sheets can be
// hundreds of MB) and keeping only non-empty cells. The grid comes back trimmed: no empty rows,
// no empty columns, so the first row is the sheet's header row.
//
// Merged cells: the value stays in the merge's top-left cell and is repeated down the rows of
// the merge in its first column, where those rows hold other data; the merge's other columns
// stay empty. A label spanning a group of rows so stays on every row it labels, while a title
// spread across columns is not copied into each of them.
import { checkTableSize } from '../shared/gfm-table.js';
import type { ZipArchive } from '../shared/zip-limits.js';
import { readRels } from './ooxml.js';
import { cellText, type Book } from './xlsx-book.js';
import { contentUntil, runText, scanPart } from './xml-scan.js';

const CELL = `<(?:\\w+:)?c\\b([^<>]*?)(?:\\/>|>${contentUntil('c')}<\\/(?:\\w+:)?c>)`;
const SHEET_RE = new RegExp(
  `<(?:\\w+:)?row\\b([^<>]*)>|${CELL}|<(?:\\w+:)?mergeCell\\b([^<>]*)>|<(?:\\w+:)?hyperlink\\b([^<>]*)>`, 'g');
const CELL_RE = new RegExp(CELL, 'g');
const V_RE = /<(?:\w+:)?v(?:\s[^<>]*)?>([^<]*)<\/(?:\w+:)?v>/;
const IS_RE = /<(?:\w+:)?is[\s>]/;
const ATTR_RE = /([\w:]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

function attrs(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of s.matchAll(ATTR_RE)) out[m[1]!] = m[2] ?? m[3] ?? '';
  return out;
}

/** "AB12" → { row: 12, col: 28 } (both 1-based); null for anything else. */
export function parseRef(ref: string): { row: number; col: number } | null {
  const m = /^\$?([A-Za-z]{1,3})\$?(\d{1,7})$/.exec(ref.trim());
  if (!m) return null;
  let col = 0;
  for (const ch of m[1]!.toUpperCase()) col = col * 26 + (ch.charCodeAt(0) - 64);
  return { row: Number(m[2]), col };
}

const isLinkable = (url: string): boolean => /^(https?:|mailto:)/i.test(url);

export async function readSheetGrid(zip: ZipArchive, book: Book, part: string, signal?: AbortSignal): Promise<string[][]> {
  const rows = new Map<number, Map<number, string>>();
  const set = (r: number, c: number, text: string): void => {
    let row = rows.get(r);
    if (!row) rows.set(r, (row = new Map()));
    row.set(c, text);
  };
  const merges: Array<[{ row: number; col: number }, { row: number; col: number }]> = [];
  const links: Array<{ ref: string; id: string }> = [];

  let rowNo = 0;
  let colNo = 0;
  for await (const m of scanPart(zip, part, SHEET_RE, signal)) {
    if (m[1] !== undefined) {
      const r = Number(attrs(m[1]).r);
      rowNo = Number.isInteger(r) && r > 0 ? r : rowNo + 1;
      colNo = 0;
    } else if (m[2] !== undefined) {
      const a = attrs(m[2]);
      const ref = a.r ? parseRef(a.r) : null;
      const [r, c] = ref ? [ref.row, ref.col] : [Math.max(rowNo, 1), colNo + 1];
      colNo = c;
      const inner = m[3] ?? '';
      const inline = IS_RE.test(inner) ? runText(inner) : undefined;
      const text = cellText(book, a.t, V_RE.exec(inner)?.[1], inline, Number(a.s ?? 0)).trim();
      if (text !== '') set(r, c, text);
    } else if (m[4] !== undefined) {
      const [from, to] = (attrs(m[4]).ref ?? '').split(':').map(parseRef);
      if (from && to) merges.push([from, to]);
    } else if (m[5] !== undefined) {
      const a = attrs(m[5]);
      if (a.ref && a['r:id']) links.push({ ref: a.ref.split(':')[0]!, id: a['r:id'] });
    }
  }

  if (links.length > 0) {
    const rels = await readRels(zip, part);
    for (const { ref, id } of links) {
      const at = parseRef(ref);
      const url = rels.get(id)?.target;
      const text = at && rows.get(at.row)?.get(at.col);
      if (at && text && url && isLinkable(url) && text !== url) {
        set(at.row, at.col, `[${text.replace(/([[\]])/g, '\\$1')}](${url.replace(/[ ()]/g, encodeURIComponent)})`);
      }
    }
  }
  for (const [from, to] of merges) {
    const value = rows.get(from.row)?.get(from.col);
    if (!value) continue;
    for (let r = from.row + 1; r <= to.row; r++) {
      const row = rows.get(r);
      if (row && row.size > 0 && !row.has(from.col)) row.set(from.col, value);
    }
  }
  return toGrid(rows);
}

/** Only rows and columns that hold something, in sheet order. */
function toGrid(rows: Map<number, Map<number, string>>): string[][] {
  const used = new Set<number>();
  for (const row of rows.values()) for (const c of row.keys()) used.add(c);
  const cols = [...used].sort((a, b) => a - b);
  const kept = [...rows.keys()].sort((a, b) => a - b).map((r) => rows.get(r)!).filter((row) => row.size > 0);
  checkTableSize(kept.length, cols.length, 'the sheet');
  return kept.map((row) => cols.map((c) => row.get(c) ?? ''));
}

/** Non-empty cells of a sheet, without resolving any value. */
export async function countSheetCells(zip: ZipArchive, part: string, signal?: AbortSignal): Promise<number> {
  let n = 0;
  for await (const m of scanPart(zip, part, CELL_RE, signal)) {
    const inner = m[2] ?? '';
    const v = V_RE.exec(inner)?.[1];
    if ((v !== undefined && v.trim() !== '') || (IS_RE.test(inner) && runText(inner).trim() !== '')) n++;
  }
  return n;
}
