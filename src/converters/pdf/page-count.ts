// A PDF's page count read from its cross-reference data alone, for pricing and the sync limit at
// admission, without mupdf: the trailer names the catalog, the catalog the page tree, whose root
// says how many pages there are (/Count, which is what mupdf's own count reads too). It reads a
// few small pieces of the file (its last KiB, the cross-reference sections, two or three objects)
// and inflates at most a cross-reference stream and an object stream, each bounded, so it is
// cheap enough for an acceptor thread and spares a trip to the converter pool.
//
// It answers only when the file is well formed where it looks: every offset lands on the object
// it names, every section parses, nothing is encrypted. Anything else (a broken or repaired file,
// an encryption dictionary, a filter other than Flate, a structure past the bounds below) is
// `undefined`, and the caller counts with mupdf on a pool thread, which repairs what it can and
// gives the errors users see (a password needed, no pages).
import { open, type FileHandle } from 'node:fs/promises';
import { inflate, inflateSync } from 'node:zlib';
import { promisify } from 'node:util';
import { ApiError } from '../../errors.js';
import { selectPages } from '../shared/page-range.js';
import type { ConvertOptions, Count, FileEnd } from '../types.js';

const inflateAsync = promisify(inflate);

/** How much of the file's end is read at once: where `startxref` is searched for, and where the
 *  last cross-reference section (and often the catalog) usually is. */
const TAIL_BYTES = 64 * 1024;
/** How much of the tail is searched for `startxref`. */
const STARTXREF_BYTES = 2048;
/** A stream up to this size (compressed) is inflated in the calling thread, bounded to
 *  INLINE_INFLATED_BYTES out (well under a millisecond); larger ones on libuv's threads. */
const INLINE_STREAM_BYTES = 64 * 1024;
const INLINE_INFLATED_BYTES = 1 << 20;
/** The most one object (a page tree root with a long /Kids array, say) may take. */
const MAX_OBJECT_BYTES = 1 << 20;
/** The most a cross-reference or object stream may take, compressed and inflated. */
const MAX_STREAM_BYTES = 8 << 20;
/** Cross-reference sections followed through /Prev and /XRefStm before giving up. */
const MAX_SECTIONS = 64;
/** Subsections of one cross-reference table. */
const MAX_SUBSECTIONS = 4096;
/** A count above this is not believed (mupdf is asked instead). */
const MAX_PAGES = 1_000_000;

interface Ref { ref: [number, number] }
type Value = number | string | boolean | null | Ref | Value[] | Dict | { name: string };
type Dict = Map<string, Value>;

/** Where an object lives: at an offset (type 1) or inside an object stream (type 2). */
type Entry = { type: 1; offset: number; gen: number } | { type: 2; stream: number; index: number } | { type: 0 };

/** What one cross-reference section says of an object, if it lists it. */
type Section = (num: number) => Entry | undefined;

class Unsure extends Error {}

function unsure(why: string): never {
  throw new Unsure(why);
}

/** What a PDF of `pageCount` pages is priced by: the pages the request's range selects. */
export function countOfPages(pageCount: number, options: ConvertOptions): Count {
  const pages = selectPages(options.pages, pageCount).length;
  // A selection of no page would be an empty conversion, charged: refused at submit instead.
  if (pages === 0 && options.pages !== undefined) {
    const count = pageCount === 1 ? '1 page' : `${pageCount} pages`;
    throw new ApiError('invalid_request', `pages: the range selects no page of this document, which has ${count}.`);
  }
  return { pages, units: pages };
}

/**
 * The page count of the PDF at `file` as its page tree's root states it, or undefined when the
 * file's structure is not plainly readable (the caller then counts with mupdf). With `end` (the
 * file's last bytes, however many were kept as it was received, and its size) the file is opened
 * only for what lies before them; most files need nothing more.
 */
export async function quickPageCount(file: string, end?: FileEnd): Promise<number | undefined> {
  let fh: FileHandle | undefined;
  const handle = async (): Promise<FileHandle> => (fh ??= await open(file, 'r'));
  try {
    let size: number;
    let tail: Buffer;
    if (end && end.tail.length > 0 && end.tail.length <= end.bytes) {
      size = end.bytes;
      tail = end.tail;
    } else {
      size = (await (await handle()).stat()).size;
      tail = Buffer.allocUnsafe(Math.min(size, TAIL_BYTES));
      if ((await (await handle()).read(tail, 0, tail.length, size - tail.length)).bytesRead !== tail.length) return undefined;
    }
    const reader = new XrefReader(handle, size, tail);
    return await reader.pageCount();
  } catch {
    // Unsure, a stream that does not inflate or inflates past the bound, a file gone: mupdf's
    // count on a pool thread decides, and gives the document's error when there is one.
    return undefined;
  } finally {
    await fh?.close();
  }
}

class XrefReader {
  /** The newest section first, then what /XRefStm and /Prev lead to, read as needed. */
  private sections: Array<{ lookup: Section; hybrid: boolean }> = [];
  private next: number[] = [];
  private seen = new Set<number>();
  private trailer?: Dict;
  private objectStreams = new Map<number, { first: number; offsets: Map<number, number>; data: Buffer }>();

  private tailStart: number;

  constructor(private handle: () => Promise<FileHandle>, private size: number, private tail: Buffer) {
    this.tailStart = size - tail.length;
  }

  async pageCount(): Promise<number | undefined> {
    const end = this.tail.subarray(Math.max(0, this.tail.length - STARTXREF_BYTES));
    const at = end.lastIndexOf('startxref');
    if (at < 0) unsure('no startxref');
    const lex = new Lexer(end, at + 'startxref'.length, true);
    const start = lex.value();
    if (typeof start !== 'number') unsure('startxref is not a number');
    this.next.push(start);
    await this.readSection();
    const trailer = this.trailer!;
    if (trailer.has('Encrypt')) unsure('encrypted');
    const catalog = await this.resolve(trailer.get('Root'));
    if (!(catalog instanceof Map)) unsure('no catalog');
    const pages = await this.resolve(catalog.get('Pages'));
    if (!(pages instanceof Map)) unsure('no page tree');
    const count = await this.resolve(pages.get('Count'));
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > MAX_PAGES) unsure('no usable /Count');
    return count;
  }

  private async read(at: number, length: number): Promise<Buffer> {
    if (at < 0 || at >= this.size || length <= 0) unsure('offset outside the file');
    const n = Math.min(length, this.size - at);
    if (at >= this.tailStart) return this.tail.subarray(at - this.tailStart, at - this.tailStart + n);
    const buf = Buffer.allocUnsafe(n);
    const { bytesRead } = await (await this.handle()).read(buf, 0, n, at);
    return buf.subarray(0, bytesRead);
  }

  /** Reads the next pending section (table or stream) into `sections`; the first one read gives
   *  the trailer. */
  private async readSection(): Promise<boolean> {
    const at = this.next.shift();
    if (at === undefined) return false;
    if (this.seen.has(at)) unsure('a cross-reference loop');
    this.seen.add(at);
    if (this.seen.size > MAX_SECTIONS) unsure('too many cross-reference sections');
    const head = await this.read(at, 32);
    const { dict, entries } = head.subarray(0, 4).toString('latin1') === 'xref'
      ? await this.readTable(at)
      : await this.readStreamSection(at);
    // A hybrid file's table lists the objects kept in object streams as free, and names a stream
    // that lists them: read next, before /Prev, and asked about the table's free entries.
    const stm = dict.get('XRefStm');
    const prev = dict.get('Prev');
    this.sections.push({ lookup: entries, hybrid: typeof stm === 'number' });
    this.trailer ??= dict;
    if (typeof stm === 'number') this.next.unshift(stm);
    if (typeof prev === 'number') this.next.push(prev);
    return true;
  }

  private async readTable(at: number): Promise<{ dict: Dict; entries: Section }> {
    const subsections: Array<{ first: number; count: number; table: Buffer }> = [];
    let pos = at + 4;
    for (let sub = 0; ; sub++) {
      if (sub > MAX_SUBSECTIONS) unsure('too many subsections');
      const buf = await this.read(pos, 256);
      const lex = new Lexer(buf, 0, buf.length < 256);
      lex.skipSpace();
      if (buf.subarray(lex.pos, lex.pos + 7).toString('latin1') === 'trailer') {
        const dict = await this.objectAt(pos + lex.pos + 7, (l) => l.value());
        if (!(dict instanceof Map)) unsure('trailer is not a dictionary');
        return { dict, entries: tableSection(subsections) };
      }
      const first = lex.value();
      const count = lex.value();
      if (typeof first !== 'number' || typeof count !== 'number' || !Number.isInteger(first) || !Number.isInteger(count) || first < 0 || count < 0) {
        unsure('bad subsection header');
      }
      // Entries are 20 bytes each, starting on the line after the header; each one is checked
      // when it is looked up.
      let body = lex.pos;
      while (body < buf.length && (buf[body] === 0x20 || buf[body] === 0x0d || buf[body] === 0x0a)) body++;
      const start = pos + body;
      const bytes = count * 20;
      if (bytes > MAX_STREAM_BYTES) unsure('subsection too large');
      const table = count > 0 ? await this.read(start, bytes) : Buffer.alloc(0);
      if (table.length < bytes) unsure('table cut short');
      subsections.push({ first, count, table });
      pos = start + bytes;
    }
  }

  private async readStreamSection(at: number): Promise<{ dict: Dict; entries: Section }> {
    const { dict, data } = await this.streamAt(at, undefined);
    if (nameOf(dict.get('Type')) !== 'XRef') unsure('not a cross-reference stream');
    const w = dict.get('W');
    if (!Array.isArray(w) || w.length !== 3 || !w.every((x) => typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= 8)) unsure('bad /W');
    const [w0, w1, w2] = w as number[];
    const width = w0! + w1! + w2!;
    if (width === 0) unsure('bad /W');
    const size = dict.get('Size');
    if (typeof size !== 'number') unsure('no /Size');
    const index = dict.get('Index') ?? [0, size];
    if (!Array.isArray(index) || index.length % 2 !== 0 || !index.every((x) => typeof x === 'number' && Number.isInteger(x) && x >= 0)) unsure('bad /Index');
    const rows = unpredict(data, dict, width);
    const ranges: Array<{ first: number; count: number; row: number }> = [];
    for (let k = 0, row = 0; k < index.length; k += 2) {
      ranges.push({ first: index[k] as number, count: index[k + 1] as number, row });
      row += index[k + 1] as number;
    }
    return {
      dict,
      entries: (num) => {
        const r = ranges.find((x) => num >= x.first && num < x.first + x.count);
        if (!r) return undefined;
        const at = (r.row + num - r.first) * width;
        if (at + width > rows.length) unsure('cross-reference stream cut short');
        const type = w0 === 0 ? 1 : int(rows, at, w0!);
        const f2 = int(rows, at + w0!, w1!);
        const f3 = int(rows, at + w0! + w1!, w2!);
        if (type === 1) return { type: 1, offset: f2, gen: f3 };
        if (type === 2) return { type: 2, stream: f2, index: f3 };
        return { type: 0 };
      },
    };
  }

  /** Where object `num` lives, from the newest section that lists it. */
  private async entryOf(num: number): Promise<Entry | undefined> {
    for (let i = 0; ; i++) {
      while (i >= this.sections.length) if (!(await this.readSection())) return undefined;
      const { lookup, hybrid } = this.sections[i]!;
      const e = lookup(num);
      if (!e) continue;
      if (!(hybrid && e.type === 0)) return e;
      // free in a hybrid table: what its stream (the section read right after it) says
      while (i + 1 >= this.sections.length) if (!(await this.readSection())) return e;
      return this.sections[i + 1]!.lookup(num) ?? e;
    }
  }

  /** A value with references followed (up to a few steps). */
  private async resolve(v: Value | undefined, depth = 0): Promise<Value | undefined> {
    if (v === undefined || !isRef(v)) return v;
    if (depth > 8) unsure('reference chain too long');
    return this.resolve(await this.object(v.ref[0], v.ref[1]), depth + 1);
  }

  private async object(num: number, gen: number): Promise<Value> {
    const e = await this.entryOf(num);
    if (!e || e.type === 0) unsure(`object ${num} is not in use`);
    if (e.type === 1) {
      if (e.gen !== gen) unsure(`object ${num} has generation ${e.gen}, not ${gen}`);
      return this.objectAt(e.offset, (lex) => {
        const n = lex.value();
        const g = lex.value();
        if (n !== num || g !== gen || lex.keyword() !== 'obj') unsure(`no object ${num} at its offset`);
        return lex.value();
      });
    }
    if (gen !== 0) unsure('an object in an object stream has generation 0');
    const stm = await this.objectStream(e.stream);
    const offset = stm.offsets.get(num);
    if (offset === undefined) unsure(`object ${num} is not in object stream ${e.stream}`);
    return new Lexer(stm.data, stm.first + offset, true).value();
  }

  /** Parses what `parse` reads at `at`, reading more of the file while the object runs on. */
  private async objectAt<T>(at: number, parse: (lex: Lexer) => T): Promise<T> {
    for (let length = 4096; ; length *= 4) {
      const buf = await this.read(at, length);
      try {
        return parse(new Lexer(buf, 0, buf.length < length));
      } catch (err) {
        if (!(err instanceof OutOfData) || buf.length < length || length >= MAX_OBJECT_BYTES) {
          if (err instanceof OutOfData) unsure('object too long');
          throw err;
        }
      }
    }
  }

  /** The dictionary and inflated data of the stream object at `at`. */
  private async streamAt(at: number, num: number | undefined): Promise<{ dict: Dict; data: Buffer }> {
    const { dict, dataAt } = await this.objectAt(at, (lex) => {
      const n = lex.value();
      const g = lex.value();
      if (typeof n !== 'number' || typeof g !== 'number' || (num !== undefined && n !== num) || lex.keyword() !== 'obj') unsure('no stream object here');
      const d = lex.value();
      if (!(d instanceof Map) || lex.keyword() !== 'stream') unsure('not a stream');
      return { dict: d, dataAt: lex.streamStart() };
    });
    const length = await this.resolve(dict.get('Length'));
    if (typeof length !== 'number' || !Number.isInteger(length) || length < 0 || length > MAX_STREAM_BYTES) unsure('bad stream /Length');
    const raw = await this.read(at + dataAt, length);
    if (raw.length < length) unsure('stream cut short');
    const filter = dict.get('Filter');
    const only = Array.isArray(filter) ? (filter.length === 1 ? filter[0] : undefined) : filter;
    if (filter === undefined) return { dict, data: raw };
    if (nameOf(only) !== 'FlateDecode') unsure('a filter other than Flate');
    if (raw.length <= INLINE_STREAM_BYTES) return { dict, data: inflateSync(raw, { maxOutputLength: INLINE_INFLATED_BYTES }) };
    return { dict, data: await inflateAsync(raw, { maxOutputLength: MAX_STREAM_BYTES }) };
  }

  private async objectStream(num: number): Promise<{ first: number; offsets: Map<number, number>; data: Buffer }> {
    const known = this.objectStreams.get(num);
    if (known) return known;
    const e = await this.entryOf(num);
    if (!e || e.type !== 1) unsure(`object stream ${num} is not at an offset`);
    const { dict, data } = await this.streamAt(e.offset, num);
    const n = dict.get('N');
    const first = dict.get('First');
    if (typeof n !== 'number' || typeof first !== 'number' || !Number.isInteger(n) || !Number.isInteger(first) || n < 0 || first < 0 || first > data.length) {
      unsure('bad object stream header');
    }
    const lex = new Lexer(data.subarray(0, first), 0, true);
    const offsets = new Map<number, number>();
    for (let i = 0; i < n; i++) {
      const obj = lex.value();
      const off = lex.value();
      if (typeof obj !== 'number' || typeof off !== 'number') unsure('bad object stream header');
      if (!offsets.has(obj)) offsets.set(obj, off);
    }
    const stm = { first, offsets, data };
    this.objectStreams.set(num, stm);
    return stm;
  }
}

/** A table's subsections looked up as needed: an entry is 20 bytes, `oooooooooo ggggg n` and
 *  its end of line. */
function tableSection(subsections: ReadonlyArray<{ first: number; count: number; table: Buffer }>): Section {
  return (num) => {
    const sub = subsections.find((x) => num >= x.first && num < x.first + x.count);
    if (!sub) return undefined;
    const e = sub.table.subarray((num - sub.first) * 20, (num - sub.first) * 20 + 20);
    if (e[10] !== 0x20 || e[16] !== 0x20 || !/^\d{10} \d{5} [nf]/.test(e.subarray(0, 18).toString('latin1'))) unsure('bad table entry');
    if (e[17] !== 0x6e) return { type: 0 };
    return { type: 1, offset: Number(e.subarray(0, 10).toString('latin1')), gen: Number(e.subarray(11, 16).toString('latin1')) };
  };
}

/** A big-endian integer of `width` bytes at `at`. */
function int(buf: Buffer, at: number, width: number): number {
  let v = 0;
  for (let i = 0; i < width; i++) v = v * 256 + buf[at + i]!;
  return v;
}

/** Undoes a PNG predictor (/DecodeParms /Predictor 10–15) over rows of `width` bytes; data with
 *  no predictor comes back as it is. */
function unpredict(data: Buffer, dict: Dict, width: number): Buffer {
  const parms = dict.get('DecodeParms');
  if (!(parms instanceof Map)) return data;
  const predictor = parms.get('Predictor') ?? 1;
  if (predictor === 1) return data;
  if (typeof predictor !== 'number' || predictor < 10 || predictor > 15) unsure('an unsupported predictor');
  const columns = parms.get('Columns') ?? 1;
  if (columns !== width) unsure('predictor columns differ from the row width');
  const stride = width + 1;
  const rows = Math.floor(data.length / stride);
  const out = Buffer.alloc(rows * width);
  for (let r = 0; r < rows; r++) {
    const kind = data[r * stride]!;
    for (let i = 0; i < width; i++) {
      const x = data[r * stride + 1 + i]!;
      const left = i > 0 ? out[r * width + i - 1]! : 0;
      const up = r > 0 ? out[(r - 1) * width + i]! : 0;
      const upLeft = r > 0 && i > 0 ? out[(r - 1) * width + i - 1]! : 0;
      let v: number;
      if (kind === 0) v = x;
      else if (kind === 1) v = x + left;
      else if (kind === 2) v = x + up;
      else if (kind === 3) v = x + ((left + up) >> 1);
      else if (kind === 4) v = x + paeth(left, up, upLeft);
      else unsure('a bad PNG row filter');
      out[r * width + i] = v & 0xff;
    }
  }
  return out;
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

function isRef(v: Value): v is Ref {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Map) && 'ref' in v;
}

function nameOf(v: Value | undefined): string | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Map) && 'name' in v ? v.name : undefined;
}

/** The lexer ran off the end of what was read (more of the file may hold the rest). */
class OutOfData extends Unsure {}

/** Digits, signs and the decimal point. */
function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2e;
}

const WHITE = new Set([0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]);
const DELIM = new Set([0x28, 0x29, 0x3c, 0x3e, 0x5b, 0x5d, 0x7b, 0x7d, 0x2f, 0x25]);

/** Just enough of the PDF object syntax for dictionaries, arrays, numbers, names, strings and
 *  references; strings are skipped, not decoded (nothing here needs their text). */
class Lexer {
  /** Nesting of arrays and dictionaries, bounded: a file is not a stack overflow. */
  private depth = 0;

  constructor(private buf: Buffer, public pos: number, private whole = false) {}

  private end(): never {
    if (this.whole) unsure('object runs past its data');
    throw new OutOfData();
  }

  skipSpace(): void {
    const b = this.buf;
    for (;;) {
      while (this.pos < b.length && WHITE.has(b[this.pos]!)) this.pos++;
      if (this.pos < b.length && b[this.pos] === 0x25) { // a comment, to the end of its line
        while (this.pos < b.length && b[this.pos] !== 0x0a && b[this.pos] !== 0x0d) this.pos++;
        continue;
      }
      return;
    }
  }

  /** A bare word (obj, stream, R, true, …), or '' when the next token is not one. */
  keyword(): string {
    this.skipSpace();
    const start = this.pos;
    while (this.pos < this.buf.length && !WHITE.has(this.buf[this.pos]!) && !DELIM.has(this.buf[this.pos]!)) this.pos++;
    if (this.pos === this.buf.length && !this.whole) this.end();
    return this.buf.subarray(start, this.pos).toString('latin1');
  }

  /** Where a stream's data starts, after the `stream` keyword and its end of line. */
  streamStart(): number {
    if (this.buf[this.pos] === 0x0d) this.pos++;
    if (this.buf[this.pos] === 0x0a) this.pos++;
    return this.pos;
  }

  value(): Value {
    this.skipSpace();
    const b = this.buf;
    if (this.pos >= b.length) this.end();
    const c = b[this.pos]!;
    if (c === 0x2f) return { name: this.name() };
    if (c === 0x3c && b[this.pos + 1] === 0x3c) return this.dict();
    if (c === 0x3c) return this.hexString();
    if (c === 0x28) return this.literalString();
    if (c === 0x5b) return this.array();
    if (isNumberChar(c)) return this.numberOrRef();
    const word = this.keyword();
    if (word === 'true') return true;
    if (word === 'false') return false;
    if (word === 'null') return null;
    return unsure(`unexpected "${word.slice(0, 20)}"`);
  }

  private name(): string {
    this.pos++;
    const start = this.pos;
    while (this.pos < this.buf.length && !WHITE.has(this.buf[this.pos]!) && !DELIM.has(this.buf[this.pos]!)) this.pos++;
    if (this.pos === this.buf.length && !this.whole) this.end();
    return this.buf.subarray(start, this.pos).toString('latin1').replace(/#([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  }

  private nest(): void {
    if (++this.depth > 64) unsure('nested too deep');
  }

  private dict(): Dict {
    this.nest();
    this.pos += 2;
    const d: Dict = new Map();
    for (;;) {
      this.skipSpace();
      if (this.pos >= this.buf.length) this.end();
      if (this.buf[this.pos] === 0x3e && this.buf[this.pos + 1] === 0x3e) {
        this.pos += 2;
        this.depth--;
        return d;
      }
      if (this.buf[this.pos] !== 0x2f) unsure('a dictionary key is not a name');
      const key = this.name();
      d.set(key, this.value());
    }
  }

  private array(): Value[] {
    this.nest();
    this.pos++;
    const a: Value[] = [];
    for (;;) {
      this.skipSpace();
      if (this.pos >= this.buf.length) this.end();
      if (this.buf[this.pos] === 0x5d) {
        this.pos++;
        this.depth--;
        return a;
      }
      a.push(this.value());
    }
  }

  private hexString(): string {
    const close = this.buf.indexOf(0x3e, this.pos);
    if (close < 0) this.end();
    this.pos = close + 1;
    return '';
  }

  private literalString(): string {
    let depth = 0;
    for (; this.pos < this.buf.length; this.pos++) {
      const c = this.buf[this.pos];
      if (c === 0x5c) this.pos++; // an escaped character
      else if (c === 0x28) depth++;
      else if (c === 0x29 && --depth === 0) {
        this.pos++;
        return '';
      }
    }
    return this.end();
  }

  private number(): number {
    const start = this.pos;
    let value = 0;
    let plain = true;
    for (; this.pos < this.buf.length && isNumberChar(this.buf[this.pos]!); this.pos++) {
      const c = this.buf[this.pos]!;
      if (c >= 0x30 && c <= 0x39) value = value * 10 + c - 0x30;
      else plain = false;
    }
    if (this.pos === this.buf.length && !this.whole) this.end();
    // the common case, a whole number of up to 15 digits, without making a string
    if (plain && this.pos > start && this.pos - start <= 15) return value;
    const n = Number(this.buf.subarray(start, this.pos).toString('latin1'));
    if (!Number.isFinite(n)) unsure('a bad number');
    return n;
  }

  /** A number, or `n g R` (a reference). */
  private numberOrRef(): Value {
    const n = this.number();
    if (!Number.isInteger(n) || n < 0) return n;
    const save = this.pos;
    this.skipSpace();
    const c = this.buf[this.pos];
    if (c === undefined && !this.whole) this.end();
    if (c !== undefined && c >= 0x30 && c <= 0x39) {
      const g = this.number();
      this.skipSpace();
      if (this.pos >= this.buf.length && !this.whole) this.end();
      if (this.buf[this.pos] === 0x52 && (this.pos + 1 >= this.buf.length || WHITE.has(this.buf[this.pos + 1]!) || DELIM.has(this.buf[this.pos + 1]!))) {
        if (this.pos + 1 >= this.buf.length && !this.whole) this.end();
        this.pos++;
        return { ref: [n, g] };
      }
    }
    this.pos = save;
    return n;
  }
}
