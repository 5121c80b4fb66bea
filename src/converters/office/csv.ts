// Reads a CSV file as records, streaming: the charset is detected from the first bytes (BOM,
// then strict UTF-8, then chardet), the delimiter sniffed from the first records (comma,
// semicolon, tab or pipe), and quoted fields may hold delimiters, quotes ("") and newlines.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { isUtf8 } from 'node:buffer';
import chardet from 'chardet';
import iconv from 'iconv-lite';

const SAMPLE_BYTES = 64 * 1024;
const DELIMITERS = [',', ';', '\t', '|'] as const;

/** The charset of a byte sample and how many BOM bytes to skip. */
export function detectCharset(sample: Buffer): { encoding: string; bom: number } {
  if (sample[0] === 0xef && sample[1] === 0xbb && sample[2] === 0xbf) return { encoding: 'utf-8', bom: 3 };
  if (sample[0] === 0xff && sample[1] === 0xfe) return { encoding: 'utf-16le', bom: 2 };
  if (sample[0] === 0xfe && sample[1] === 0xff) return { encoding: 'utf-16be', bom: 2 };
  // The sample may end inside a multi-byte character: allow up to 3 cut-off bytes.
  for (let cut = 0; cut <= Math.min(3, sample.length); cut++) {
    if (isUtf8(sample.subarray(0, sample.length - cut))) return { encoding: 'utf-8', bom: 0 };
  }
  // chardet alone misreads short CJK samples as Windows-1252; its candidates and the common
  // multi-byte charsets are each decoded and the most plausible text wins (ties: chardet's order).
  const names = [...chardet.analyse(sample).map((m) => m.name), ...FALLBACKS]
    .map((n) => n.toLowerCase())
    .map((n) => (n === 'iso-8859-1' || n === 'ascii' ? 'windows-1252' : n))
    .filter((n, i, all) => all.indexOf(n) === i && iconv.encodingExists(n));
  let best = 'windows-1252';
  let bestScore = -Infinity;
  for (const name of names) {
    const score = plausibility(iconv.decode(sample, name));
    if (score > bestScore) [best, bestScore] = [name, score];
  }
  return { encoding: best, bom: 0 };
}

const FALLBACKS = ['shift_jis', 'euc-jp', 'gb18030', 'big5', 'euc-kr', 'windows-1252'];

/** How much the non-ASCII part of a decoded text reads like language rather than mojibake. */
function plausibility(text: string): number {
  let good = 0;
  let bad = 0;
  let other = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x80) {
      if (cp < 0x20 && cp !== 9 && cp !== 10 && cp !== 13) bad++;
    } else if (cp === 0xfffd || (cp >= 0x80 && cp < 0xa0) || (cp >= 0xff61 && cp <= 0xff9f) || (cp >= 0xe000 && cp <= 0xf8ff)) {
      bad++; // replacement, C1 controls, half-width kana (Latin read as Shift_JIS), private use
    } else if (/[\p{L}\p{M}]/u.test(ch)) {
      good++;
    } else {
      other++;
    }
  }
  return (good - 3 * bad - 0.5 * other) / Math.max(1, good + bad + other);
}

/** A push parser for delimited text; records come out whole, fields untrimmed. */
export class CsvParser {
  private field = '';
  private record: string[] = [];
  private state: 'start' | 'plain' | 'quoted' | 'quote' = 'start';
  private skipLf = false;

  constructor(private readonly delimiter: string) {}

  push(text: string, out: string[][]): void {
    const d = this.delimiter;
    for (let i = 0; i < text.length; i++) {
      const ch = text[i]!;
      if (this.skipLf) {
        this.skipLf = false;
        if (ch === '\n') continue;
      }
      if (this.state === 'quoted') {
        if (ch === '"') this.state = 'quote';
        else if (ch === '\r') { this.field += '\n'; this.skipLf = true; }
        else this.field += ch;
      } else if (this.state === 'quote' && ch === '"') {
        this.field += '"';
        this.state = 'quoted';
      } else if (ch === d) {
        this.endField();
      } else if (ch === '\n' || ch === '\r') {
        this.endRecord(out);
        this.skipLf = ch === '\r';
      } else if (this.state === 'start' && ch === '"') {
        this.state = 'quoted';
      } else {
        // Text after a closing quote is kept as it is, as spreadsheet programs do.
        this.field += ch;
        this.state = 'plain';
      }
    }
  }

  end(out: string[][]): void {
    if (this.field !== '' || this.record.length > 0 || this.state !== 'start') this.endRecord(out);
  }

  private endField(): void {
    this.record.push(this.field);
    this.field = '';
    this.state = 'start';
  }

  private endRecord(out: string[][]): void {
    this.endField();
    const rec = this.record;
    this.record = [];
    if (rec.length > 1 || rec[0] !== '') out.push(rec);
  }
}

/** The delimiter that splits the sample's records into the most consistent number of fields (>1). */
export function sniffDelimiter(sample: string): string {
  let best: string = ',';
  let bestScore = 0;
  for (const d of DELIMITERS) {
    const records: string[][] = [];
    const p = new CsvParser(d);
    p.push(sample, records);
    if (records.length > 1) records.pop(); // the sample's last record may be cut short
    const counts = new Map<number, number>();
    for (const r of records.slice(0, 50)) counts.set(r.length, (counts.get(r.length) ?? 0) + 1);
    let mode = 1;
    let freq = 0;
    for (const [n, f] of counts) if (f > freq || (f === freq && n > mode)) [mode, freq] = [n, f];
    if (mode < 2) continue;
    const score = (freq / Math.min(records.length, 50)) * 1000 + Math.min(mode, 999);
    if (score > bestScore) [best, bestScore] = [d, score];
  }
  return best;
}

/** Records of a CSV file in batches, decoded and split; each batch is what one read produced. */
export async function* csvRecords(path: string, signal?: AbortSignal): AsyncGenerator<string[][]> {
  const fh = await open(path, 'r');
  const sample = Buffer.alloc(SAMPLE_BYTES);
  let sampleLen: number;
  try {
    sampleLen = (await fh.read(sample, 0, SAMPLE_BYTES, 0)).bytesRead;
  } finally {
    await fh.close();
  }
  const { encoding, bom } = detectCharset(sample.subarray(0, sampleLen));
  const decoder = iconv.getDecoder(encoding, { stripBOM: false });
  let parser: CsvParser | null = null;
  let head = '';
  for await (const chunk of createReadStream(path, { start: bom, highWaterMark: SAMPLE_BYTES })) {
    signal?.throwIfAborted();
    let text = decoder.write(chunk as Buffer);
    if (!parser) {
      // The delimiter is sniffed once, from the first decoded block.
      head += text;
      if (head.length < SAMPLE_BYTES / 2) continue;
      parser = new CsvParser(sniffDelimiter(head));
      text = head;
      head = '';
    }
    const out: string[][] = [];
    parser.push(text, out);
    if (out.length > 0) yield out;
  }
  const rest = head + (decoder.end() ?? '');
  parser ??= new CsvParser(sniffDelimiter(rest));
  const out: string[][] = [];
  parser.push(rest, out);
  parser.end(out);
  if (out.length > 0) yield out;
}
