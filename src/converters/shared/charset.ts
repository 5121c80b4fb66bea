// Turns the bytes of a text-like document (plain text, HTML) into a string.
// Order, as browsers do it: a byte-order mark wins; then the declared charset (HTTP header,
// <meta charset>, <?xml encoding?>); then bytes that are valid UTF-8 are UTF-8; then chardet's
// guess; UTF-8 with replacement characters as the last resort. Decoding uses iconv-lite, so
// legacy encodings (Shift_JIS, windows-125x, GB18030, KOI8-R...) work without ICU.
import chardet from 'chardet';
import iconv from 'iconv-lite';
import { ApiError } from '../../errors.js';

const BOMS: Array<[number[], string]> = [
  [[0xef, 0xbb, 0xbf], 'utf-8'],
  [[0xff, 0xfe, 0x00, 0x00], 'utf-32le'],
  [[0x00, 0x00, 0xfe, 0xff], 'utf-32be'],
  [[0xff, 0xfe], 'utf-16le'],
  [[0xfe, 0xff], 'utf-16be'],
];

/**
 * Largest text-like document (plain text, HTML) converted: its decoded text must fit in one
 * JavaScript string, which V8 caps at 2^29 − 24 characters (about 536 million).
 */
export const MAX_TEXT_BYTES = 500_000_000;

/** Refuses, before reading it, a text-like file that could not be held as one string. */
export function checkTextSize(bytes: number, what: string): void {
  if (bytes > MAX_TEXT_BYTES) {
    throw new ApiError('invalid_document', `The ${what} is ${Math.round(bytes / 1e6)} MB; ${what}s larger than `
      + `${MAX_TEXT_BYTES / 1e6} MB cannot be converted in one piece: split it into smaller files.`);
  }
}

/** chardet looks at this much; more only costs time. */
const DETECT_SAMPLE = 64 * 1024;

/** The encoding a byte-order mark names, and the mark's length. */
export function bomOf(buf: Uint8Array): { encoding: string; length: number } | null {
  for (const [mark, encoding] of BOMS) {
    if (buf.length >= mark.length && mark.every((b, i) => buf[i] === b)) return { encoding, length: mark.length };
  }
  return null;
}

/**
 * A charset label as iconv-lite knows it, or null when unknown. Follows the WHATWG Encoding
 * standard where it differs from the labels' literal meaning: latin1/ascii mean windows-1252.
 */
export function normaliseCharset(label: string | undefined | null): string | null {
  if (!label) return null;
  const l = label.trim().replace(/^["']|["']$/g, '').toLowerCase();
  if (!l) return null;
  if (/^(iso-?8859-1|latin-?1|l1|us-ascii|ascii|iso_8859-1(:1987)?|cp819)$/.test(l)) return 'windows-1252';
  if (l === 'utf-16' || l === 'unicode') return 'utf-16le';
  if (l === 'x-sjis' || l === 'shift-jis' || l === 'sjis') return 'shift_jis';
  return iconv.encodingExists(l) ? l : null;
}

/** The charset parameter of a Content-Type header value. */
export function charsetFromContentType(contentType: string | undefined | null): string | undefined {
  const m = /;\s*charset\s*=\s*("?)([^";\s]+)\1/i.exec(contentType ?? '');
  return m?.[2];
}

/** The charset an HTML or XML document declares in its first bytes (<meta>, <?xml?>). */
export function declaredInMarkup(head: Buffer): string | undefined {
  const text = head.subarray(0, 4096).toString('latin1');
  const meta = /<meta\b[^>]*?\bcharset\s*=\s*["']?\s*([\w.:-]+)/i.exec(text);
  // A <meta> readable as ASCII cannot be in UTF-16: browsers take such a label as UTF-8.
  if (meta) return /^utf-?16/i.test(meta[1]!) ? 'utf-8' : meta[1];
  const xml = /^\s*<\?xml\b[^>]*\bencoding\s*=\s*["']([\w.:-]+)["']/i.exec(text);
  return xml?.[1];
}

function isUtf8(buf: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(buf);
    return true;
  } catch {
    return false;
  }
}

/** chardet's best guess, normalised; null when it has none. */
export function detectCharset(buf: Buffer): string | null {
  return normaliseCharset(chardet.detect(buf.subarray(0, DETECT_SAMPLE)));
}

/** The encoding decodeText would use for these bytes and this declaration. */
export function chooseCharset(buf: Buffer, declared?: string): { encoding: string; skip: number } {
  const bom = bomOf(buf);
  if (bom) return { encoding: bom.encoding, skip: bom.length };
  const named = normaliseCharset(declared);
  // A document labelled UTF-8 that is not is common; anything else is trusted as labelled.
  if (named && (named !== 'utf-8' && named !== 'utf8' || isUtf8(buf))) return { encoding: named, skip: 0 };
  if (isUtf8(buf)) return { encoding: 'utf-8', skip: 0 };
  return { encoding: detectCharset(buf) ?? 'utf-8', skip: 0 };
}

export function decodeText(buf: Buffer, declared?: string): string {
  const { encoding, skip } = chooseCharset(buf, declared);
  return iconv.decode(buf.subarray(skip), encoding, { stripBOM: true });
}
