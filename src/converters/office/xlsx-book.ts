// Workbook-level facts of an .xlsx that cell values depend on: the sheets in workbook order
// (and which are hidden), the shared strings, the number formats of the cell styles, the 1904
// date system; and the one function that turns a cell's stored value into the text Excel shows.
import type { ZipArchive } from '../shared/zip-limits.js';
import { builtinFormatCode, compileFormat, type NumberFormat } from './num-format.js';
import { attr, findAll, kids, localName, readTree, readRels, type Rel } from './ooxml.js';
import { contentUntil, decodeSpreadsheetText, runText, scanPart } from './xml-scan.js';

export interface SheetRef {
  name: string;
  /** The sheet's part, or null when the workbook points nowhere. */
  part: string | null;
  kind: 'worksheet' | 'chartsheet' | 'other';
  /** state="hidden" or "veryHidden" in the workbook. */
  hidden: boolean;
}

export interface Book {
  sheets: SheetRef[];
  date1904: boolean;
  shared: string[];
  /** Number format per cell style index (the cell's s attribute). */
  formats: NumberFormat[];
  /** The people of threaded comments (xl/persons/person.xml), when the workbook has them. */
  personsPart?: string;
}

/** Sheets only: cheap, for count(). */
export async function readSheetList(zip: ZipArchive, mainPart: string): Promise<{ sheets: SheetRef[]; date1904: boolean; rels: Map<string, Rel> }> {
  const tree = await readTree(zip, mainPart);
  const rels = await readRels(zip, mainPart);
  const pr = findAll(tree, 'workbookPr')[0];
  const date1904 = ['1', 'true'].includes(attr(pr, 'date1904') ?? '');
  const sheets = findAll(tree, 'sheet').map((s): SheetRef => {
    const rel = rels.get(attr(s, 'r:id') ?? '');
    const kind = rel?.type.endsWith('/worksheet') ? 'worksheet' : rel?.type.endsWith('/chartsheet') ? 'chartsheet' : 'other';
    const hidden = ['hidden', 'veryhidden'].includes((attr(s, 'state') ?? '').toLowerCase());
    return { name: attr(s, 'name') ?? 'Sheet', part: rel && !rel.external && zip.has(rel.target) ? rel.target : null, kind, hidden };
  });
  return { sheets, date1904, rels };
}

export async function readBook(zip: ZipArchive, mainPart: string, signal?: AbortSignal): Promise<Book> {
  const { sheets, date1904, rels } = await readSheetList(zip, mainPart);
  const partOf = (suffix: string): string | undefined =>
    [...rels.values()].find((r) => r.type.endsWith(suffix) && zip.has(r.target))?.target;

  const shared: string[] = [];
  const sst = partOf('/sharedStrings');
  if (sst) {
    const si = new RegExp(`<(?:\\w+:)?si\\s*\\/>|<(?:\\w+:)?si>${contentUntil('si')}<\\/(?:\\w+:)?si>`, 'g');
    for await (const m of scanPart(zip, sst, si, signal)) {
      shared.push(runText(m[1] ?? ''));
    }
  }

  const formats: NumberFormat[] = [];
  const stylesPart = partOf('/styles');
  if (stylesPart) {
    const tree = await readTree(zip, stylesPart);
    const custom = new Map<number, string>();
    for (const f of findAll(tree, 'numFmt')) custom.set(Number(attr(f, 'numFmtId')), attr(f, 'formatCode') ?? '');
    // Many styles share a few codes: each code is compiled once.
    const compiled = new Map<string, NumberFormat>();
    const xfs = kids(findAll(tree, 'cellXfs')[0]).filter((x) => localName(x) === 'xf');
    for (const xf of xfs) {
      const id = Number(attr(xf, 'numFmtId') ?? 0);
      const code = custom.get(id) ?? builtinFormatCode(id);
      let fmt = compiled.get(code);
      if (!fmt) compiled.set(code, (fmt = compileFormat(code, date1904)));
      formats.push(fmt);
    }
  }
  return { sheets, date1904, shared, formats, personsPart: partOf('/person') };
}

/** Up to 15 significant digits, as Excel itself shows numbers (0.1+0.2 is 0.3). */
export function formatNumber(n: number): string {
  const r = Number(n.toPrecision(15));
  return Object.is(r, -0) ? '0' : String(r);
}

const GENERAL = compileFormat('General');

/** The text of one cell, as Excel shows it, from its type attribute, stored value, inline
 *  string and style. Formulas are read from their cached value. */
export function cellText(book: Book, type: string | undefined, raw: string | undefined, inline: string | undefined, style: number): string {
  const fmt = book.formats[style] ?? GENERAL;
  switch (type) {
    case 's': return fmt.text(book.shared[Number(raw)] ?? '');
    case 'inlineStr': return fmt.text(inline ?? (raw === undefined ? '' : decodeSpreadsheetText(raw)));
    case 'b': return raw === undefined ? '' : raw.trim() === '1' ? 'TRUE' : 'FALSE';
    case 'str': return raw === undefined ? '' : fmt.text(decodeSpreadsheetText(raw).trim());
    case 'e': case 'd': return raw === undefined ? '' : decodeSpreadsheetText(raw).trim();
  }
  if (raw === undefined || raw.trim() === '') return inline ?? '';
  const n = Number(raw);
  if (!Number.isFinite(n)) return decodeSpreadsheetText(raw).trim();
  return fmt.number(n);
}
