// Prices a legacy or OpenDocument file without converting it (DESIGN.md §3), in the units of its
// kind, read straight from the file: Word pages of 3,000 characters (.doc: the character counts
// in its file information block; .odt: the text of content.xml; .rtf: its text outside control
// words and hidden groups), Excel sheets and non-empty cells (.xls: sheet and cell records;
// .ods: sheets and valued cells of content.xml), slides (.ppt: the slide list of the current
// document record; .odp: draw:page elements).
//
// A count is an estimate taken before LibreOffice runs: the conversion then charges the count of
// the OOXML twin it actually converted, never more than this (run-job caps the charge at the
// reservation). A file whose structure cannot be read (truncated, a zip bomb) is priced by its
// size instead of refused here: the conversion fails that file alone, and a failed file costs
// nothing; a request with other files goes on.
import { open, stat } from 'node:fs/promises';
import { decodeXml } from '../office/ooxml.js';
import { scanPart } from '../office/xml-scan.js';
import { withZip } from '../shared/zip-limits.js';
import type { Count } from '../types.js';
import { FORMATS, type LegacyFormat } from './formats.js';
import { withOle2 } from './ole2.js';

export const CHARS_PER_PAGE = 3000;

const pagesOf = (chars: number): number => Math.max(1, Math.ceil(chars / CHARS_PER_PAGE));

export async function countLegacy(file: string, format: LegacyFormat): Promise<Count> {
  try {
    return await COUNTERS[format](file);
  } catch {
    return bySize(format, (await stat(file)).size);
  }
}

/** What a damaged file is priced at: as if every 10 bytes were a character or a cell, every
 *  20 KB a slide; generous, and never charged beyond what its twin counts. */
function bySize(format: LegacyFormat, bytes: number): Count {
  const kind = FORMATS[format].kind;
  if (kind === 'word') return words(Math.ceil(bytes / 10));
  if (kind === 'excel') return { pages: 1, units: Math.ceil(bytes / 10) };
  const slides = Math.max(1, Math.ceil(bytes / 20_000));
  return { pages: slides, units: slides };
}

const words = (chars: number): Count => ({ pages: pagesOf(chars), units: pagesOf(chars) });

const COUNTERS: Record<LegacyFormat, (file: string) => Promise<Count>> = {
  doc: async (file) => words(await docChars(file)),
  odt: async (file) => words(await odtChars(file)),
  rtf: async (file) => words(await rtfChars(file)),
  xls: xlsCells,
  ods: odsCells,
  ppt: async (file) => slides(await pptSlides(file)),
  odp: async (file) => slides(await odpSlides(file)),
};

const slides = (n: number): Count => ({ pages: n, units: n });

// ---- .doc: FibRgLw97 of the File Information Block at the start of the WordDocument stream ----

async function docChars(file: string): Promise<number> {
  return withOle2(file, async (f) => {
    const fib = await f.readStream('WordDocument', 1024);
    if (!fib || fib.length < 34 || fib.readUInt16LE(0) !== 0xa5ec) throw new Error('no Word 97 FIB');
    const csw = fib.readUInt16LE(32);
    const lw = 32 + 2 + csw * 2 + 2;
    if (lw + 44 > fib.length) throw new Error('short FIB');
    // ccpText (main text) and ccpTxbx (text boxes): both land in the twin's document body.
    return fib.readInt32LE(lw + 12) + Math.max(0, fib.readInt32LE(lw + 36));
  });
}

// ---- .xls: BIFF records of the Workbook stream ----

/** Cell records that hold a value (blanks are not counted), and how many cells each holds. */
const XLS_CELLS: Record<number, (len: number) => number> = {
  0x0203: () => 1, // NUMBER
  0x027e: () => 1, // RK
  0x00fd: () => 1, // LABELSST
  0x0204: () => 1, // LABEL
  0x00d6: () => 1, // RSTRING
  0x0006: () => 1, // FORMULA
  0x0205: () => 1, // BOOLERR
  0x00bd: (len) => Math.max(0, Math.floor((len - 6) / 6)), // MULRK
};
const BOUNDSHEET = 0x0085;

async function xlsCells(file: string): Promise<Count> {
  return withOle2(file, async (f) => {
    const wb = (await f.readStream('Workbook', Number.MAX_SAFE_INTEGER)) ?? (await f.readStream('Book', Number.MAX_SAFE_INTEGER));
    if (!wb) throw new Error('no workbook stream');
    let sheets = 0;
    let cells = 0;
    for (let at = 0; at + 4 <= wb.length;) {
      const type = wb.readUInt16LE(at);
      const len = wb.readUInt16LE(at + 2);
      if (type === BOUNDSHEET) sheets++;
      else if (XLS_CELLS[type]) cells += XLS_CELLS[type]!(len);
      at += 4 + len;
    }
    if (sheets === 0) throw new Error('no sheets');
    return { pages: sheets, units: cells };
  });
}

// ---- .ppt: the slide list of the last DocumentContainer of the PowerPoint Document stream ----

const RT_DOCUMENT = 0x03e8;
const RT_SLIDE_LIST = 0x0ff0;
const RT_SLIDE_PERSIST = 0x03f3;
const RT_SLIDE = 0x03ee;

async function pptSlides(file: string): Promise<number> {
  return withOle2(file, async (f) => {
    const s = await f.readStream('PowerPoint Document', Number.MAX_SAFE_INTEGER);
    if (!s) throw new Error('no PowerPoint Document stream');
    // Saving edits appends records, so the last document record describes the deck as it is.
    let doc: [number, number] | undefined;
    let slideRecords = 0;
    for (let at = 0; at + 8 <= s.length;) {
      const type = s.readUInt16LE(at + 2);
      const len = s.readUInt32LE(at + 4);
      if (type === RT_DOCUMENT) doc = [at + 8, Math.min(s.length, at + 8 + len)];
      if (type === RT_SLIDE) slideRecords++;
      at += 8 + len;
    }
    if (doc) {
      for (let at = doc[0]; at + 8 <= doc[1];) {
        const verInst = s.readUInt16LE(at);
        const type = s.readUInt16LE(at + 2);
        const len = s.readUInt32LE(at + 4);
        // The slide list is instance 0; masters and notes have their own lists.
        if (type === RT_SLIDE_LIST && verInst >> 4 === 0) {
          let n = 0;
          for (let i = at + 8; i + 8 <= Math.min(doc[1], at + 8 + len);) {
            if (s.readUInt16LE(i + 2) === RT_SLIDE_PERSIST) n++;
            i += 8 + s.readUInt32LE(i + 4);
          }
          return n;
        }
        at += 8 + len;
      }
    }
    if (slideRecords === 0) throw new Error('no slides found');
    return slideRecords;
  });
}

// ---- OpenDocument: content.xml, streamed under the zip limits ----

async function odtChars(file: string): Promise<number> {
  return withZip(file, async (zip) => {
    let chars = 0;
    let inBody = false;
    // Text between tags, once inside <office:body>: styles and declarations hold none.
    for await (const m of scanPart(zip, 'content.xml', /<office:body\b|>([^<]+)</g)) {
      if (m[1] === undefined) inBody = true;
      else if (inBody) chars += decodeXml(m[1]).length;
    }
    return chars;
  });
}

async function odsCells(file: string): Promise<Count> {
  return withZip(file, async (zip) => {
    let sheets = 0;
    let cells = 0;
    let rowRepeat = 1;
    const re = /<table:table\s[^>]*>|<table:table-row\b([^>]*)>|<table:table-cell\b([^>]*?)(\/?)>/g;
    for await (const m of scanPart(zip, 'content.xml', re)) {
      if (m[0].startsWith('<table:table ')) sheets++;
      else if (m[1] !== undefined) rowRepeat = repeat(m[1], 'table:number-rows-repeated');
      else if (m[2] !== undefined && (m[2].includes('office:value-type') || m[3] === '')) {
        cells += rowRepeat * repeat(m[2], 'table:number-columns-repeated');
      }
    }
    return { pages: Math.max(1, sheets), units: cells };
  });
}

function repeat(attrs: string, name: string): number {
  const m = new RegExp(`${name}="(\\d{1,9})"`).exec(attrs);
  return m ? Math.max(1, Number(m[1])) : 1;
}

async function odpSlides(file: string): Promise<number> {
  return withZip(file, async (zip) => {
    let n = 0;
    for await (const _ of scanPart(zip, 'content.xml', /<draw:page[\s>]/g)) n++;
    return n;
  });
}

// ---- RTF: characters of text, read as a stream ----

/** Groups whose content is not text that lands in the document body. */
const RTF_HIDDEN = new Set([
  'fonttbl', 'colortbl', 'stylesheet', 'info', 'pict', 'object', 'listtable', 'listoverridetable', 'rsidtbl',
  'generator', 'themedata', 'colorschememapping', 'datastore', 'latentstyles', 'xmlnstbl', 'header', 'footer',
  'headerl', 'headerr', 'headerf', 'footerl', 'footerr', 'footerf', 'footnote', 'annotation', 'fldinst', 'filetbl',
  'revtbl', 'pgdsctbl', 'mmathPr', 'wgrffmtfilter', 'userprops', 'docvar', 'bkmkstart', 'bkmkend',
]);
const RTF_ONE_CHAR = new Set(['par', 'line', 'tab', 'cell', 'emdash', 'endash', 'bullet', 'lquote', 'rquote', 'ldblquote', 'rdblquote']);

export async function rtfChars(file: string): Promise<number> {
  const fh = await open(file, 'r');
  try {
    const scanner = new RtfCounter();
    const buf = Buffer.alloc(256 * 1024);
    let carry = '';
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      const text = carry + buf.toString('latin1', 0, bytesRead);
      // A control word cut at the chunk's end waits for the next chunk.
      const cut = text.lastIndexOf('\\');
      const keep = cut >= 0 && text.length - cut < 40 ? cut : text.length;
      scanner.feed(text.slice(0, keep));
      carry = text.slice(keep);
    }
    scanner.feed(carry);
    return scanner.chars;
  } finally {
    await fh.close();
  }
}

class RtfCounter {
  chars = 0;
  private depth = 0;
  /** The depth of the hidden group being skipped, or -1. */
  private hiddenAt = -1;
  private groupStart = false;
  private uc = 1;
  private fallback = 0;

  feed(s: string): void {
    const word = /\\([a-zA-Z]{1,32})(-?\d{1,10})? ?|\\'[0-9a-fA-F]{2}|\\([^a-zA-Z])|([{}])|([\r\n]+)|([^\\{}\r\n]+)/g;
    for (let m = word.exec(s); m; m = word.exec(s)) {
      const start = this.groupStart;
      this.groupStart = false;
      const hidden = this.hiddenAt >= 0;
      if (m[4] === '{') {
        this.depth++;
        this.groupStart = true;
      } else if (m[4] === '}') {
        if (this.depth === this.hiddenAt) this.hiddenAt = -1;
        this.depth = Math.max(0, this.depth - 1);
      } else if (m[1] !== undefined) {
        const name = m[1];
        if (start && !hidden && RTF_HIDDEN.has(name)) this.hiddenAt = this.depth;
        else if (name === 'uc') this.uc = Number(m[2] ?? 1);
        else if (!hidden && name === 'u') { this.chars++; this.fallback = this.uc; } else if (!hidden && RTF_ONE_CHAR.has(name)) this.chars++;
      } else if (m[3] !== undefined) {
        if (m[3] === '*' && start && !hidden) this.hiddenAt = this.depth;
        else if (!hidden && '\\{}~_-'.includes(m[3])) this.text(1);
      } else if (m[0].startsWith("\\'")) {
        if (!hidden) this.text(1);
      } else if (m[6] !== undefined && !hidden) {
        this.text(m[6].length);
      }
    }
  }

  /** Text characters, less those that are the ANSI fallback of a preceding \u. */
  private text(n: number): void {
    const skip = Math.min(n, this.fallback);
    this.fallback -= skip;
    this.chars += n - skip;
  }
}
