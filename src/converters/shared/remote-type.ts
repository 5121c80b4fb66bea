// What a fetched document is and what to call it, for the URL converter: the media type from the
// Content-Type header, or from the bytes when the header is missing, generic
// (application/octet-stream) or a text/plain that the bytes contradict (a common server default);
// the file name from Content-Disposition or the URL's last path segment, with an extension that
// matches the type so the registry can route it.
import path from 'node:path';

const GENERIC = new Set([
  'application/octet-stream', 'binary/octet-stream', 'application/x-download', 'application/force-download',
  'application/unknown', 'application/binary',
]);

const EXTENSIONS: Record<string, string> = {
  'text/html': '.html',
  'application/xhtml+xml': '.xhtml',
  'text/plain': '.txt',
  'text/markdown': '.md',
  'text/csv': '.csv',
  'application/pdf': '.pdf',
  'image/png': '.png',
  'image/jpeg': '.jpg',
  'image/gif': '.gif',
  'image/webp': '.webp',
  'image/tiff': '.tiff',
  'application/zip': '.zip',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': '.docx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': '.xlsx',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': '.pptx',
};

const BY_EXTENSION: Record<string, string> = Object.fromEntries(
  Object.entries(EXTENSIONS).map(([mime, ext]) => [ext, mime]),
);

const HTML_START = /^\s*<(?:!doctype\s+html|html|head|body|!--|meta|title|script|div|p|h[1-6]|table)[\s>/]/i;

/** The type the first bytes show (magic numbers, then HTML, then text), or null. */
export function sniffMime(head: Buffer, nameHint = ''): string | null {
  const starts = (sig: number[], at = 0): boolean => sig.every((b, i) => head[at + i] === b);
  if (head.subarray(0, 5).toString('latin1') === '%PDF-') return 'application/pdf';
  if (starts([0x89, 0x50, 0x4e, 0x47])) return 'image/png';
  if (starts([0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (head.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  if (head.subarray(0, 4).toString('latin1') === 'RIFF' && head.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  if (starts([0x49, 0x49, 0x2a, 0x00]) || starts([0x4d, 0x4d, 0x00, 0x2a])) return 'image/tiff';
  if (starts([0x50, 0x4b, 0x03, 0x04])) {
    const byName = BY_EXTENSION[path.extname(nameHint).toLowerCase()];
    return byName && /officedocument|zip/.test(byName) ? byName : 'application/zip';
  }
  const text = head.toString('utf8').replace(/^\uFEFF/, '');
  if (HTML_START.test(text)) return 'text/html';
  if (!head.includes(0)) return 'text/plain';
  return null;
}

/** The bare media type of a Content-Type value ("text/html; charset=x" → "text/html"). */
export function bareMime(contentType: string | undefined): string | undefined {
  const m = /^\s*([\w.+-]+\/[\w.+-]+)/.exec(contentType ?? '');
  return m?.[1]?.toLowerCase();
}

/** The file name a Content-Disposition header gives, if any (RFC 6266, filename* first). */
export function dispositionName(disposition: string | undefined): string | undefined {
  if (!disposition) return undefined;
  const extended = /filename\*\s*=\s*[\w-]*'[^']*'([^;\s]+)/i.exec(disposition);
  if (extended) {
    try {
      return decodeURIComponent(extended[1]!);
    } catch { /* fall through to the plain parameter */ }
  }
  const plain = /filename\s*=\s*(?:"([^"]*)"|([^;\s]+))/i.exec(disposition);
  return plain?.[1] ?? plain?.[2];
}

export function fileNameOf(url: URL, disposition: string | undefined, mime: string): string {
  let name = dispositionName(disposition) ?? '';
  if (!name) {
    const last = url.pathname.split('/').filter(Boolean).pop() ?? '';
    try {
      name = decodeURIComponent(last);
    } catch {
      name = last;
    }
  }
  name = path.basename(name.replace(/\\/g, '/')).replace(/[\u0000-\u001F]/g, '').trim() || 'index';
  const ext = EXTENSIONS[mime];
  if (ext && path.extname(name).toLowerCase() !== ext && !(ext === '.html' && /\.html?$/i.test(name))) name += ext;
  return name;
}

/** The media type to convert a fetched document as. */
export function contentTypeOf(contentType: string | undefined, head: Buffer, url: URL, disposition?: string): string {
  const declared = bareMime(contentType);
  const hint = dispositionName(disposition) ?? url.pathname;
  const sniffed = sniffMime(head, hint);
  const byName = BY_EXTENSION[path.extname(hint).toLowerCase()];
  if (!declared || GENERIC.has(declared)) {
    if (sniffed === 'text/plain' && byName?.startsWith('text/')) return byName;
    return sniffed ?? byName ?? 'application/octet-stream';
  }
  if (declared === 'text/plain' && sniffed && !sniffed.startsWith('text/')) return sniffed;
  return declared;
}
