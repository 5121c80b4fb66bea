// Reads the compound file (OLE2, "CFB") that holds the legacy binary Office formats (.doc, .xls,
// .ppt): the names of the root storage's streams, and the first bytes of one stream, with random
// reads on the file (never the whole file in memory). Every sector number, chain and size comes
// from the document and is checked: a chain that loops, leaves the file or runs past its stream's
// size is a damaged document (422), never a hang. Only what sniffing and pricing need is here.
import { open, type FileHandle } from 'node:fs/promises';
import { ApiError } from '../../errors.js';

export const OLE2_MAGIC = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);

/** Sector numbers at or above this are markers (end of chain, free, FAT, DIFAT), not sectors. */
const MAX_REGULAR_SECTOR = 0xfffffffa;
const ENTRY_BYTES = 128;
const HEADER_DIFAT = 109;

const damaged = (detail: string): ApiError => new ApiError('invalid_document', `a damaged compound (OLE2) file: ${detail}`);

export interface Ole2Entry {
  name: string;
  /** 1 storage, 2 stream, 5 root. */
  type: number;
  start: number;
  size: number;
  left: number;
  right: number;
  child: number;
}

export function isOle2(bytes: Buffer): boolean {
  return bytes.length >= 8 && bytes.subarray(0, 8).equals(OLE2_MAGIC);
}

/** One 128-byte directory entry; null for an unused slot. */
export function parseEntry(b: Buffer, at: number): Ole2Entry | null {
  const type = b[at + 0x42]!;
  if (type !== 1 && type !== 2 && type !== 5) return null;
  const nameBytes = Math.min(64, b.readUInt16LE(at + 0x40));
  const name = b.toString('utf16le', at, at + Math.max(0, nameBytes - 2)).replace(/\0+$/, '');
  return {
    name, type, start: b.readUInt32LE(at + 0x74), size: b.readUInt32LE(at + 0x78),
    left: b.readUInt32LE(at + 0x44), right: b.readUInt32LE(at + 0x48), child: b.readUInt32LE(at + 0x4c),
  };
}

/** Where the first directory sector lies in the file, from the header. */
export function firstDirectoryOffset(header: Buffer): { offset: number; sectorBytes: number } | null {
  if (header.length < 0x50) return null;
  const shift = header.readUInt16LE(0x1e);
  if (shift !== 9 && shift !== 12) return null;
  const dir = header.readUInt32LE(0x30);
  if (dir >= MAX_REGULAR_SECTOR) return null;
  return { offset: (dir + 1) * (1 << shift), sectorBytes: 1 << shift };
}

export class Ole2File {
  private fat: Uint32Array = new Uint32Array(0);
  private miniFat: Uint32Array = new Uint32Array(0);
  private entries: Ole2Entry[] = [];
  private sectorBytes = 512;
  private miniCutoff = 4096;
  private sectors = 0;

  private constructor(private readonly fh: FileHandle, private readonly fileSize: number) {}

  static async open(path: string): Promise<Ole2File> {
    const fh = await open(path, 'r');
    try {
      const f = new Ole2File(fh, (await fh.stat()).size);
      await f.load();
      return f;
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  close(): Promise<void> {
    return this.fh.close();
  }

  /** The streams and storages directly under the root storage. */
  rootChildren(): Ole2Entry[] {
    const root = this.entries[0];
    if (!root || root.type !== 5) throw damaged('no root storage');
    const out: Ole2Entry[] = [];
    const seen = new Set<number>();
    const stack = [root.child];
    while (stack.length > 0) {
      const i = stack.pop()!;
      if (i >= this.entries.length || seen.has(i)) continue;
      seen.add(i);
      const e = this.entries[i];
      if (!e) continue;
      out.push(e);
      stack.push(e.left, e.right);
    }
    return out;
  }

  /** Up to `max` bytes from the start of a root-level stream; null when there is no such stream. */
  async readStream(name: string, max: number): Promise<Buffer | null> {
    const e = this.rootChildren().find((c) => c.type === 2 && c.name.toLowerCase() === name.toLowerCase());
    if (!e) return null;
    const want = Math.min(e.size, max);
    if (e.size < this.miniCutoff) return this.readMini(e.start, want);
    return this.readChain(this.fat, e.start, want, this.sectorBytes, (s) => this.sectorOffset(s));
  }

  private sectorOffset(s: number): number {
    return (s + 1) * this.sectorBytes;
  }

  private async readAt(offset: number, length: number): Promise<Buffer> {
    if (offset < 0 || offset + length > this.fileSize) throw damaged('a sector lies past the end of the file');
    const buf = Buffer.alloc(length);
    const { bytesRead } = await this.fh.read(buf, 0, length, offset);
    if (bytesRead !== length) throw damaged('a short read');
    return buf;
  }

  private async load(): Promise<void> {
    const h = await this.readAt(0, 512).catch(() => { throw damaged('shorter than its header'); });
    if (!isOle2(h)) throw damaged('no compound file signature');
    const shift = h.readUInt16LE(0x1e);
    if (shift !== 9 && shift !== 12) throw damaged(`sector size 2^${shift}`);
    this.sectorBytes = 1 << shift;
    this.sectors = Math.max(0, Math.floor(this.fileSize / this.sectorBytes) - 1);
    this.miniCutoff = h.readUInt32LE(0x38) || 4096;
    const fatCount = h.readUInt32LE(0x2c);
    if (fatCount > this.sectors) throw damaged('more FAT sectors than the file holds');

    // The FAT's own sectors: 109 in the header, the rest in a chain of DIFAT sectors.
    const fatSectors: number[] = [];
    for (let i = 0; i < HEADER_DIFAT && fatSectors.length < fatCount; i++) fatSectors.push(h.readUInt32LE(0x4c + i * 4));
    let difat = h.readUInt32LE(0x44);
    const perDifat = this.sectorBytes / 4 - 1;
    for (let hops = 0; fatSectors.length < fatCount && difat < MAX_REGULAR_SECTOR; hops++) {
      if (hops > this.sectors) throw damaged('the DIFAT chain loops');
      const d = await this.readAt(this.sectorOffset(difat), this.sectorBytes);
      for (let i = 0; i < perDifat && fatSectors.length < fatCount; i++) fatSectors.push(d.readUInt32LE(i * 4));
      difat = d.readUInt32LE(perDifat * 4);
    }
    const fat = new Uint32Array(fatSectors.length * (this.sectorBytes / 4));
    for (const [i, s] of fatSectors.entries()) {
      if (s >= MAX_REGULAR_SECTOR) throw damaged('a FAT sector is missing');
      const b = await this.readAt(this.sectorOffset(s), this.sectorBytes);
      for (let j = 0; j < this.sectorBytes / 4; j++) fat[i * (this.sectorBytes / 4) + j] = b.readUInt32LE(j * 4);
    }
    this.fat = fat;

    const dir = await this.readChain(fat, h.readUInt32LE(0x30), Infinity, this.sectorBytes, (s) => this.sectorOffset(s));
    for (let at = 0; at + ENTRY_BYTES <= dir.length; at += ENTRY_BYTES) this.entries.push(parseEntry(dir, at) ?? emptyEntry());

    const miniFatStart = h.readUInt32LE(0x3c);
    if (miniFatStart < MAX_REGULAR_SECTOR) {
      const m = await this.readChain(fat, miniFatStart, h.readUInt32LE(0x40) * this.sectorBytes, this.sectorBytes, (s) => this.sectorOffset(s));
      this.miniFat = new Uint32Array(m.length / 4);
      for (let j = 0; j < this.miniFat.length; j++) this.miniFat[j] = m.readUInt32LE(j * 4);
    }
  }

  /** Follows a chain of sectors from `start`, reading up to `max` bytes. */
  private async readChain(table: Uint32Array, start: number, max: number, unit: number, offsetOf: (s: number) => number | Promise<number>): Promise<Buffer> {
    const parts: Buffer[] = [];
    let got = 0;
    let s = start;
    for (let hops = 0; s < MAX_REGULAR_SECTOR && got < max; hops++) {
      if (hops > table.length) throw damaged('a sector chain loops');
      const take = Math.min(unit, max - got);
      parts.push(await this.readAt(await offsetOf(s), take));
      got += take;
      if (s >= table.length) throw damaged('a sector chain leaves the allocation table');
      s = table[s]!;
    }
    if (max !== Infinity && got < max) throw damaged('a stream is shorter than its size');
    return Buffer.concat(parts);
  }

  /** A small stream: 64-byte sectors inside the root's mini stream. */
  private async readMini(start: number, max: number): Promise<Buffer> {
    const root = this.entries[0]!;
    const miniBytes = 64;
    // The mini stream's own regular sectors, in order (small: it holds only streams under 4 KiB).
    const container: number[] = [];
    for (let s = root.start, hops = 0; s < MAX_REGULAR_SECTOR; hops++) {
      if (hops > this.fat.length) throw damaged('the mini stream chain loops');
      container.push(s);
      if (s >= this.fat.length) throw damaged('the mini stream leaves the allocation table');
      s = this.fat[s]!;
    }
    const perSector = this.sectorBytes / miniBytes;
    return this.readChain(this.miniFat, start, max, miniBytes, (m) => {
      const sector = container[Math.floor(m / perSector)];
      if (sector === undefined) throw damaged('a mini sector lies outside the mini stream');
      return this.sectorOffset(sector) + (m % perSector) * miniBytes;
    });
  }
}

function emptyEntry(): Ole2Entry {
  return { name: '', type: 0, start: 0, size: 0, left: 0xffffffff, right: 0xffffffff, child: 0xffffffff };
}

export async function withOle2<T>(path: string, fn: (f: Ole2File) => Promise<T>): Promise<T> {
  const f = await Ole2File.open(path);
  try {
    return await fn(f);
  } finally {
    await f.close();
  }
}
