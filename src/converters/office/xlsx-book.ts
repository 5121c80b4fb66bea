// Workbook-level facts of an .xlsx that cell values depend on: the sheets in workbook order,
// the shared strings, the number formats of the cell styles, the 1904 date system; and the
// one function that turns a cell's stored value into the text a reader should see.
import type { ZipArchive } from '../shared/zip-limits.js';
import { attr, findAll, kids, localName, readTree, readRels, type Rel } from './ooxml.js';
import { contentUntil, decodeSpreadsheetText, runText, scanPart } from './xml-scan.js';

export interface SheetRef {
  name: string;
  /** The sheet's part, or null when the workbook points nowhere. */
  part: string | null;
  kind: 'worksheet' | 'chartsheet' | 'other';
}

export type NumFmt = { kind: 'number' | 'date' | 'time' | 'datetime' } | { kind: 'percent'; decimals: number };

export interface Book {
  sheets: SheetRef[];
  date1904: boolean;
  shared: string[];
  /** Number format per cell style index (the cell's s attribute). */
  formats: NumFmt[];
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
    return { name: attr(s, 'name') ?? 'Sheet', part: rel && !rel.external && zip.has(rel.target) ? rel.target : null, kind };
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

  const formats: NumFmt[] = [];
  const stylesPart = partOf('/styles');
  if (stylesPart) {
    const tree = await readTree(zip, stylesPart);
    const custom = new Map<number, string>();
    for (const f of findAll(tree, 'numFmt')) custom.set(Number(attr(f, 'numFmtId')), attr(f, 'formatCode') ?? '');
    const xfs = kids(findAll(tree, 'cellXfs')[0]).filter((x) => localName(x) === 'xf');
    for (const xf of xfs) {
      const id = Number(attr(xf, 'numFmtId') ?? 0);
      formats.push(custom.has(id) ? classify(custom.get(id)!) : builtin(id));
    }
  }
  return { sheets, date1904, shared, formats };
}

function builtin(id: number): NumFmt {
  if (id === 9) return { kind: 'percent', decimals: 0 };
  if (id === 10) return { kind: 'percent', decimals: 2 };
  if ((id >= 14 && id <= 17) || (id >= 27 && id <= 31) || (id >= 34 && id <= 36) || (id >= 50 && id <= 58)) return { kind: 'date' };
  if (id === 22) return { kind: 'datetime' };
  if ((id >= 18 && id <= 21) || (id >= 45 && id <= 47) || id === 32 || id === 33) return { kind: 'time' };
  return { kind: 'number' };
}

/** Classifies a custom format code by what it shows; only its first (positive) section counts. */
export function classify(code: string): NumFmt {
  const c = code.split(';')[0]!
    .replace(/"[^"]*"/g, '')
    .replace(/\\.|[_*]./g, '')
    .replace(/\[(?!h+\]|m+\]|s+\])[^\]]*\]/gi, '');
  const time = /[hs]/i.test(c);
  const date = /[dy]/i.test(c) || (/m/i.test(c) && !time);
  if (date) return { kind: time ? 'datetime' : 'date' };
  if (time) return { kind: 'time' };
  if (c.includes('%')) return { kind: 'percent', decimals: /\.(0+)/.exec(c)?.[1]?.length ?? 0 };
  return { kind: 'number' };
}

/** Up to 15 significant digits, as Excel itself shows numbers (0.1+0.2 is 0.3). */
export function formatNumber(n: number): string {
  const r = Number(n.toPrecision(15));
  return Object.is(r, -0) ? '0' : String(r);
}

const DAY_MS = 86_400_000;

/** ISO 8601 from an Excel serial date: YYYY-MM-DD, HH:MM:SS or YYYY-MM-DDTHH:MM:SS. */
export function excelDate(serial: number, date1904: boolean, kind: 'date' | 'time' | 'datetime'): string {
  let days = Math.floor(serial);
  let secs = Math.round((serial - days) * 86400);
  if (secs === 86400) { days += 1; secs = 0; }
  // The 1900 system counts a 29 February 1900 that never was; serials before it are one day off.
  if (!date1904 && days < 60) days += 1;
  const epoch = date1904 ? Date.UTC(1904, 0, 1) : Date.UTC(1899, 11, 30);
  const iso = new Date(epoch + days * DAY_MS + secs * 1000).toISOString();
  const [d, t] = [iso.slice(0, 10), iso.slice(11, 19)];
  if (kind === 'time' && serial < 1) return t;
  if (kind === 'date' && secs === 0) return d;
  return `${d}T${t}`;
}

/** The text of one cell from its type attribute, stored value and inline string. */
export function cellText(book: Book, type: string | undefined, raw: string | undefined, inline: string | undefined, style: number): string {
  switch (type) {
    case 's': return book.shared[Number(raw)] ?? '';
    case 'inlineStr': return inline ?? (raw === undefined ? '' : decodeSpreadsheetText(raw));
    case 'b': return raw === undefined ? '' : raw.trim() === '1' ? 'TRUE' : 'FALSE';
    case 'str': case 'e': case 'd': return raw === undefined ? '' : decodeSpreadsheetText(raw).trim();
  }
  if (raw === undefined || raw.trim() === '') return inline ?? '';
  const n = Number(raw);
  if (!Number.isFinite(n)) return decodeSpreadsheetText(raw).trim();
  const fmt = book.formats[style] ?? { kind: 'number' };
  if (fmt.kind === 'percent') return `${formatNumber(Number((n * 100).toFixed(fmt.decimals)))}%`;
  if (fmt.kind !== 'number' && n >= 0 && n < 2958466) return excelDate(n, book.date1904, fmt.kind);
  return formatNumber(n);
}
