// Streams one large XML part (an xlsx sheet, shared strings, a docx body) and yields the
// matches of a regular expression over it, without holding the whole part in memory or
// building a tree. Fit for the small, regular elements of OOXML (cells, <w:t> runs): a match
// must be one complete element, and the expression must not match a truncated one (end every
// alternative on a closing tag or '>').
import type { ZipArchive } from '../shared/zip-limits.js';
import { decodeXml } from './ooxml.js';

/** No single element we look for is anywhere near this long; a tail this big without a match is
 *  junk (what is left unmatched at the end of a part is simply not yielded). */
const MAX_CARRY = 4 * 1024 * 1024;

export async function* scanPart(zip: ZipArchive, part: string, re: RegExp, signal?: AbortSignal): AsyncGenerator<RegExpExecArray> {
  // A private copy: lastIndex must not be shared between scans running at the same time.
  const rx = new RegExp(re.source, re.flags.includes('g') ? re.flags : `${re.flags}g`);
  const decoder = new TextDecoder('utf-8');
  let buf = '';
  let fresh = 0;
  const chunks = zip.chunks(part)[Symbol.asyncIterator]();
  for (let done = false; !done;) {
    const next = await chunks.next();
    signal?.throwIfAborted();
    done = next.done === true;
    const text = done ? decoder.decode() : decoder.decode(next.value, { stream: true });
    buf += text;
    fresh += text.length;
    // The carried tail is scanned again with each batch: batches of at least a quarter of it keep
    // the total work linear even when a hostile tail never matches.
    if (!done && fresh < Math.max(64 * 1024, buf.length / 4)) continue;
    fresh = 0;
    let keep = 0;
    rx.lastIndex = 0;
    for (let m = rx.exec(buf); m; m = rx.exec(buf)) {
      keep = rx.lastIndex;
      yield m;
    }
    buf = buf.slice(keep);
    if (buf.length > MAX_CARRY) {
      // Keep only what could still be the start of one element.
      const cut = buf.lastIndexOf('<', buf.length - MAX_CARRY / 4);
      buf = cut > 0 ? buf.slice(cut) : buf.slice(-MAX_CARRY / 4);
    }
  }
}

/** Content of an element up to its closing tag, stopping at any nested open or close of the same
 *  name, so a regex built on it fails fast (and in linear time) on unclosed, hostile markup. */
export const contentUntil = (tag: string): string => `((?:[^<]|<(?!\\/?(?:\\w+:)?${tag}[\\s>/]))*)`;

const T_RE = /<(?:\w+:)?t(?:\s[^<>]*)?>([^<]*)<\/(?:\w+:)?t>/g;
const PHONETIC_RE = new RegExp(`<(?:\\w+:)?rPh\\b[^<>]*>${contentUntil('rPh')}<\\/(?:\\w+:)?rPh>`, 'g');

/** The text of the <t> elements inside a rich or plain string item, phonetic guides left out. */
export function runText(xml: string): string {
  let out = '';
  const body = xml.replace(PHONETIC_RE, '');
  T_RE.lastIndex = 0;
  for (let m = T_RE.exec(body); m; m = T_RE.exec(body)) out += m[1];
  return decodeSpreadsheetText(out);
}

/** XML entities, then SpreadsheetML's _xHHHH_ escapes for control characters; CRLF as LF. */
export function decodeSpreadsheetText(raw: string): string {
  return decodeXml(raw)
    .replace(/_x([0-9a-fA-F]{4})_/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))
    .replace(/\r\n?/g, '\n');
}
