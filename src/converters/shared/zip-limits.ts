// Opens zip-based documents (docx, xlsx, pptx) with limits, so a zip bomb is refused in bounded
// time and memory (DESIGN.md §9). Every zip input goes through here before anything else reads
// it: converters read parts with ZipArchive (mammoth too, through the Word converter's package
// adapter), and a library that opens the zip itself gets the file only after checkZip() has
// inflated every entry under the limits.
//
// Two lines of defence: the central directory's declared sizes are checked on open (entry
// count, total inflated bytes, compression ratio), and while inflating no entry may produce
// more bytes than it declared, so lying headers are caught after at most one small chunk.
//
// A file of up to WHOLE_FILE_MAX bytes is read whole on open, in one read: its parts are then
// taken from memory instead of two reads each. read() inflates a part in one native zlib call
// capped at its declared size; chunks() streams it (for the parts scanned without being held),
// in one chunk when it declares at most ONE_CHUNK_MAX bytes.
import { open, type FileHandle } from 'node:fs/promises';
import { inflateRawSync } from 'node:zlib';
import { Inflate } from 'fflate';
import { ApiError } from '../../errors.js';

export interface ZipLimits {
  maxEntries: number;
  maxTotalBytes: number;
  /** Highest inflated:compressed ratio allowed for an entry larger than ratioMinBytes. */
  maxRatio: number;
  ratioMinBytes: number;
}

export const DEFAULT_ZIP_LIMITS: ZipLimits = {
  maxEntries: 10_000,
  maxTotalBytes: 512 * 1024 * 1024,
  maxRatio: 200,
  ratioMinBytes: 1024 * 1024,
};

export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  headerOffset: number;
}

const EOCD_SIG = 0x06054b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const ZIP64_EOCD_SIG = 0x06064b50;
const CDIR_SIG = 0x02014b50;
const LOCAL_SIG = 0x04034b50;
/** Compressed bytes pushed per inflate step: bounds the output of one step to ~8 MiB. */
const READ_CHUNK = 8 * 1024;
/** Files up to this size are held in memory while open (Office documents without large media). */
export const WHOLE_FILE_MAX = 4 * 1024 * 1024;
/** Entries up to this size are streamed as one chunk, inflated in one call. */
const ONE_CHUNK_MAX = 1024 * 1024;

const bad = (detail: string): ApiError => new ApiError('invalid_document', `not a readable zip document: ${detail}`);

/** Names are looked up case-insensitively and without a leading slash, as OOXML part names are. */
const key = (name: string): string => name.replace(/^\/+/, '').toLowerCase();

/** The file's bytes, from memory when it was read whole, else read at each call. */
class Source {
  constructor(private readonly fh: FileHandle, readonly size: number, private readonly whole: Buffer | null) {}

  static async of(fh: FileHandle): Promise<Source> {
    const { size } = await fh.stat();
    if (size > WHOLE_FILE_MAX) return new Source(fh, size, null);
    const whole = Buffer.allocUnsafe(size);
    let got = 0;
    while (got < size) {
      const { bytesRead } = await fh.read(whole, got, size - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return new Source(fh, got, whole.subarray(0, got));
  }

  /** Up to `len` bytes at `pos` (fewer at the end of the file); never shares a buffer that is written again. */
  async bytes(pos: number, len: number): Promise<Buffer> {
    if (this.whole) return this.whole.subarray(Math.min(pos, this.size), Math.min(pos + len, this.size));
    const buf = Buffer.allocUnsafe(len);
    const { bytesRead } = await this.fh.read(buf, 0, len, pos);
    return buf.subarray(0, bytesRead);
  }
}

export class ZipArchive {
  private readonly byName = new Map<string, ZipEntry>();

  private constructor(private readonly fh: FileHandle, private readonly src: Source, readonly entries: readonly ZipEntry[],
    readonly limits: ZipLimits) {
    for (const e of entries) this.byName.set(key(e.name), e);
  }

  /** Reads the central directory and checks the declared sizes against the limits. */
  static async open(path: string, limits: ZipLimits = DEFAULT_ZIP_LIMITS): Promise<ZipArchive> {
    const fh = await open(path, 'r');
    try {
      const src = await Source.of(fh);
      const entries = await readDirectory(src, limits);
      return new ZipArchive(fh, src, entries, limits);
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  has(name: string): boolean {
    return this.byName.has(key(name));
  }

  entry(name: string): ZipEntry | undefined {
    return this.byName.get(key(name));
  }

  /** Where an entry's compressed bytes start, from its local header. */
  private async dataStart(e: ZipEntry): Promise<number> {
    const local = await this.src.bytes(e.headerOffset, 30);
    if (local.length < 30 || local.readUInt32LE(0) !== LOCAL_SIG) throw bad(`broken local header for ${e.name}`);
    return e.headerOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
  }

  /** Inflated chunks of one entry; throws invalid_document as soon as it outgrows its declared size. */
  async *chunks(name: string): AsyncGenerator<Uint8Array> {
    const e = this.entry(name);
    if (!e) throw bad(`missing part ${name}`);
    if (e.size <= ONE_CHUNK_MAX) {
      yield await this.read(name);
      return;
    }
    let pos = await this.dataStart(e);
    const end = pos + e.compressedSize;
    let produced = 0;
    let pending: Uint8Array[] = [];
    const inflater = e.method === 8 ? new Inflate((chunk) => { produced += chunk.length; pending.push(chunk); }) : null;
    while (pos < end) {
      const piece = await this.src.bytes(pos, Math.min(READ_CHUNK, end - pos));
      if (piece.length === 0) throw bad(`${e.name} is truncated`);
      pos += piece.length;
      if (inflater) {
        try {
          inflater.push(piece, pos >= end);
        } catch {
          throw bad(`${e.name} does not inflate`);
        }
      } else {
        produced += piece.length;
        pending.push(piece);
      }
      if (produced > e.size) throw bad(`${e.name} inflates to more than the ${e.size} bytes it declares`);
      for (const c of pending) yield c;
      pending = [];
    }
  }

  /** One entry, whole: its compressed bytes in one read, inflated in one call that stops past the declared size. */
  async read(name: string): Promise<Buffer> {
    const e = this.entry(name);
    if (!e) throw bad(`missing part ${name}`);
    const data = await this.src.bytes(await this.dataStart(e), e.compressedSize);
    if (data.length < e.compressedSize) throw bad(`${e.name} is truncated`);
    if (e.method === 0 || data.length === 0) return Buffer.from(data);
    let out: Buffer;
    try {
      out = inflateRawSync(data, { maxOutputLength: Math.max(1, e.size) });
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw bad(`${e.name} inflates to more than the ${e.size} bytes it declares`);
      throw bad(`${e.name} does not inflate`);
    }
    if (out.length > e.size) throw bad(`${e.name} inflates to more than the ${e.size} bytes it declares`);
    return out;
  }

  async readText(name: string): Promise<string> {
    return (await this.read(name)).toString('utf8').replace(/^\uFEFF/, '');
  }

  /** Inflates every entry and throws away the bytes: proves the whole zip keeps its word. */
  async verifyAll(signal?: AbortSignal): Promise<void> {
    for (const e of this.entries) {
      signal?.throwIfAborted();
      // eslint-disable-next-line @typescript-eslint/no-unused-vars
      for await (const _ of this.chunks(e.name)) { /* discard */ }
    }
  }

  async close(): Promise<void> {
    await this.fh.close();
  }
}

/** Opens a zip, runs `fn` on it and always closes it. */
export async function withZip<T>(path: string, fn: (zip: ZipArchive) => Promise<T>, limits?: ZipLimits): Promise<T> {
  const zip = await ZipArchive.open(path, limits);
  try {
    return await fn(zip);
  } finally {
    await zip.close();
  }
}

/** For libraries that open the zip themselves: throws unless every entry is within the limits. */
export async function checkZip(path: string, signal?: AbortSignal, limits?: ZipLimits): Promise<void> {
  await withZip(path, (zip) => zip.verifyAll(signal), limits);
}

async function readDirectory(src: Source, limits: ZipLimits): Promise<ZipEntry[]> {
  const fileSize = src.size;
  const tailLen = Math.min(fileSize, 22 + 0xffff);
  const tail = await src.bytes(fileSize - tailLen, tailLen);
  let at = -1;
  for (let i = tailLen - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD_SIG) { at = i; break; }
  }
  if (at < 0) throw bad('no end of central directory');
  let count = tail.readUInt16LE(at + 10);
  let dirSize = tail.readUInt32LE(at + 12);
  let dirOffset = tail.readUInt32LE(at + 16);
  if (at >= 20 && tail.readUInt32LE(at - 20) === ZIP64_LOCATOR_SIG) {
    const z64 = await src.bytes(Number(tail.readBigUInt64LE(at - 12)), 56);
    if (z64.length < 56 || z64.readUInt32LE(0) !== ZIP64_EOCD_SIG) throw bad('broken zip64 directory');
    count = Number(z64.readBigUInt64LE(32));
    dirSize = Number(z64.readBigUInt64LE(40));
    dirOffset = Number(z64.readBigUInt64LE(48));
  }
  if (count > limits.maxEntries) throw bad(`${count} entries, more than the ${limits.maxEntries} allowed`);
  if (dirOffset + dirSize > fileSize || dirSize > count * (46 + 0xffff * 3)) throw bad('central directory out of bounds');
  const dir = await src.bytes(dirOffset, dirSize);

  const entries: ZipEntry[] = [];
  let total = 0;
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (p + 46 > dir.length || dir.readUInt32LE(p) !== CDIR_SIG) throw bad('broken central directory');
    const flags = dir.readUInt16LE(p + 8);
    const method = dir.readUInt16LE(p + 10);
    let compressedSize = dir.readUInt32LE(p + 20);
    let size = dir.readUInt32LE(p + 24);
    const nameLen = dir.readUInt16LE(p + 28);
    const extraLen = dir.readUInt16LE(p + 30);
    const commentLen = dir.readUInt16LE(p + 32);
    let headerOffset = dir.readUInt32LE(p + 42);
    if (p + 46 + nameLen + extraLen + commentLen > dir.length) throw bad('broken central directory');
    const name = dir.toString('utf8', p + 46, p + 46 + nameLen);
    // ZIP64 extra field: the 64-bit values appear only for the fields saturated at 0xffffffff.
    for (let x = p + 46 + nameLen; x + 4 <= p + 46 + nameLen + extraLen;) {
      const id = dir.readUInt16LE(x);
      const len = dir.readUInt16LE(x + 2);
      if (x + 4 + len > p + 46 + nameLen + extraLen) throw bad(`broken extra field in ${name}`);
      if (id === 0x0001) {
        let y = x + 4;
        const u64 = (): number => {
          if (y + 8 > x + 4 + len) throw bad(`broken zip64 field in ${name}`);
          const v = Number(dir.readBigUInt64LE(y));
          y += 8;
          return v;
        };
        if (size === 0xffffffff) size = u64();
        if (compressedSize === 0xffffffff) compressedSize = u64();
        if (headerOffset === 0xffffffff) headerOffset = u64();
      }
      x += 4 + len;
    }
    p += 46 + nameLen + extraLen + commentLen;

    if (flags & 1) throw bad(`${name} is encrypted`);
    if (method !== 0 && method !== 8) throw bad(`${name} uses unsupported compression method ${method}`);
    if (method === 0 && size !== compressedSize) throw bad(`${name} is stored with inconsistent sizes`);
    if (headerOffset + 30 + compressedSize > fileSize) throw bad(`${name} lies outside the file`);
    total += size;
    if (total > limits.maxTotalBytes) throw bad(`inflates to more than ${limits.maxTotalBytes} bytes`);
    if (size > limits.ratioMinBytes && size > limits.maxRatio * Math.max(1, compressedSize)) {
      throw bad(`${name} has a compression ratio over ${limits.maxRatio}:1`);
    }
    if (!name.endsWith('/')) entries.push({ name, method, compressedSize, size, headerOffset });
  }
  return entries;
}
