// Excel converter (.xlsx/.xlsm and .csv). A workbook gives one `## <sheet name>` section per
// sheet, as the sheet shows (office/xlsx-markdown.ts): values through their number formats,
// formulas as their cached values, error cells their code (#DIV/0!), hyperlink cells a Markdown
// link, one table per block of cells, comments with their authors, hidden parts left out, chart
// sheets as their charts' data. At most MAX_BOOK_CELLS cells are converted; the rest is cut with
// a note. A CSV is one table without a heading, empty rows and columns dropped.
// Pricing: pages = sheets, units = non-empty cells (hidden and cut ones included), counted
// without building any Markdown.
// .xls and .ods arrive here as their .xlsx twin, made by LibreOffice (legacy/).
import { open } from 'node:fs/promises';
import { ApiError } from '../errors.js';
import { csvRecords } from './office/csv.js';
import { acceptsOoxml, requireOfficeKind } from './office/ooxml.js';
import { readBook, readSheetList } from './office/xlsx-book.js';
import { sheetMarkdown } from './office/xlsx-markdown.js';
import { countSheetCells } from './office/xlsx-sheet.js';
import { checkTableSize, gfmTable, widestRow } from './shared/gfm-table.js';
import { withZip } from './shared/zip-limits.js';
import type { Converter, Count, Peek } from './types.js';
import { withLegacyFormats } from './legacy/index.js';

const XLSX_TYPES = [
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.ms-excel.sheet.macroenabled.12',
] as const;
const CSV_TYPES = ['text/csv', 'application/csv', 'text/comma-separated-values'] as const;
const XLSX_EXTENSIONS = ['.xlsx', '.xlsm'] as const;

/** Non-empty cells converted per workbook; past them sheets are cut at a row, with a note. */
export const MAX_BOOK_CELLS = 2_000_000;

function looksLikeCsv(peek: Peek): boolean {
  const b = peek.bytes;
  const utf16 = (b[0] === 0xff && b[1] === 0xfe) || (b[0] === 0xfe && b[1] === 0xff);
  if (!utf16 && b.includes(0)) return false;
  if (b.subarray(0, 5).toString('latin1') === '%PDF-') return false;
  const mime = peek.mime?.split(';')[0]!.trim().toLowerCase();
  return (peek.name ?? '').toLowerCase().endsWith('.csv') || (mime !== undefined && (CSV_TYPES as readonly string[]).includes(mime));
}

async function isZip(path: string): Promise<boolean> {
  const fh = await open(path, 'r');
  try {
    const head = Buffer.alloc(4);
    const { bytesRead } = await fh.read(head, 0, 4, 0);
    return bytesRead === 4 && head.readUInt32LE(0) === 0x04034b50;
  } finally {
    await fh.close();
  }
}

/** Rows as a table, or a note when the sheet holds nothing. */
const tableOrNote = (grid: string[][], note: string): string => (grid.length > 0 ? gfmTable(grid) : note);

/** Drops empty cells at the edges and empty columns anywhere, as the xlsx reader does. */
function trimRecords(records: string[][]): string[][] {
  const rows = records.map((r) => r.map((c) => c.trim())).filter((r) => r.some((c) => c !== ''));
  const width = widestRow(rows);
  const used = new Uint8Array(width);
  for (const r of rows) r.forEach((c, i) => { if (c !== '') used[i] = 1; });
  const keep: number[] = [];
  for (let c = 0; c < width; c++) if (used[c]) keep.push(c);
  checkTableSize(rows.length, keep.length, 'the CSV');
  return rows.map((r) => keep.map((c) => r[c] ?? ''));
}

export interface ExcelLimits {
  /** Cells converted per workbook (MAX_BOOK_CELLS); tests lower it. */
  maxCells: number;
}

export function createExcelConverter(limits: ExcelLimits = { maxCells: MAX_BOOK_CELLS }): Converter {
  return {
    kind: 'excel',
    mediaTypes: [...XLSX_TYPES, ...CSV_TYPES],
    extensions: [...XLSX_EXTENSIONS, '.csv'],

    accepts(peek) {
      return acceptsOoxml(peek, 'excel', XLSX_EXTENSIONS, XLSX_TYPES) || looksLikeCsv(peek);
    },

    async count(path): Promise<Count> {
      if (!(await isZip(path))) {
        let units = 0;
        for await (const batch of csvRecords(path)) {
          for (const rec of batch) for (const f of rec) if (f.trim() !== '') units++;
        }
        return { pages: 1, units };
      }
      return withZip(path, async (zip) => {
        const { sheets } = await readSheetList(zip, await requireOfficeKind(zip, 'excel'));
        let units = 0;
        for (const s of sheets) if (s.part && s.kind === 'worksheet') units += await countSheetCells(zip, s.part);
        return { pages: Math.max(1, sheets.length), units };
      });
    },

    async convert(path, _options, ctx) {
      if (!(await isZip(path))) {
        const records: string[][] = [];
        for await (const batch of csvRecords(path, ctx.signal)) for (const r of batch) records.push(r);
        const table = tableOrNote(trimRecords(records), '*(empty file)*');
        ctx.progress(1, 1);
        return { markdown: `${table}\n`, pages: [table], pageCount: 1, mime: 'text/csv' };
      }
      return withZip(path, async (zip) => {
        const book = await readBook(zip, await requireOfficeKind(zip, 'excel'), ctx.signal);
        if (book.sheets.length === 0) throw new ApiError('invalid_document', 'the workbook lists no sheets');
        const budget = { left: limits.maxCells, limit: limits.maxCells };
        const pages: string[] = [];
        for (const [i, sheet] of book.sheets.entries()) {
          ctx.signal.throwIfAborted();
          pages.push(await sheetMarkdown(zip, book, sheet, budget, ctx.signal));
          ctx.progress(i + 1, book.sheets.length);
        }
        return { markdown: `${pages.join('\n\n')}\n`, pages, pageCount: pages.length, mime: XLSX_TYPES[0] };
      });
    },
  };
}

/** .xlsx and .csv, and .xls/.ods through their .xlsx twin (legacy/). */
export const excelConverter: Converter = withLegacyFormats('excel', createExcelConverter());
