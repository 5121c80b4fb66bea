// The legacy and open formats the Office endpoints take besides OOXML, and how their bytes tell
// them apart (the client's name and media type never decide): an OLE2 compound file by the
// stream its root holds (WordDocument, Workbook or Book, PowerPoint Document), an OpenDocument
// package by its `mimetype` entry, RTF by `{\rtf`. `formatOfPeek` judges the first bytes only;
// `formatOfFile` reads the whole compound directory when the first bytes did not reach it.
import { ApiError } from '../../errors.js';
import type { Peek } from '../types.js';
import { firstDirectoryOffset, isOle2, parseEntry, withOle2 } from './ole2.js';

export type OfficeKind = 'word' | 'excel' | 'powerpoint';
export type LegacyFormat = 'doc' | 'odt' | 'rtf' | 'xls' | 'ods' | 'ppt' | 'odp';

export interface FormatSpec {
  kind: OfficeKind;
  label: string;
  mediaTypes: readonly string[];
  extensions: readonly string[];
  /** The OOXML twin LibreOffice writes: extension and export filter. */
  twin: 'docx' | 'xlsx' | 'pptx';
}

export const FORMATS: Record<LegacyFormat, FormatSpec> = {
  doc: { kind: 'word', label: 'a Word 97–2003 document (.doc)', mediaTypes: ['application/msword'], extensions: ['.doc', '.dot'], twin: 'docx' },
  odt: {
    kind: 'word', label: 'an OpenDocument text (.odt)', twin: 'docx',
    mediaTypes: ['application/vnd.oasis.opendocument.text', 'application/vnd.oasis.opendocument.text-template'], extensions: ['.odt', '.ott'],
  },
  rtf: { kind: 'word', label: 'an RTF document (.rtf)', mediaTypes: ['application/rtf', 'text/rtf'], extensions: ['.rtf'], twin: 'docx' },
  xls: { kind: 'excel', label: 'an Excel 97–2003 workbook (.xls)', mediaTypes: ['application/vnd.ms-excel'], extensions: ['.xls', '.xlt'], twin: 'xlsx' },
  ods: {
    kind: 'excel', label: 'an OpenDocument spreadsheet (.ods)', twin: 'xlsx',
    mediaTypes: ['application/vnd.oasis.opendocument.spreadsheet', 'application/vnd.oasis.opendocument.spreadsheet-template'], extensions: ['.ods', '.ots'],
  },
  ppt: { kind: 'powerpoint', label: 'a PowerPoint 97–2003 deck (.ppt)', mediaTypes: ['application/vnd.ms-powerpoint'], extensions: ['.ppt', '.pot', '.pps'], twin: 'pptx' },
  odp: {
    kind: 'powerpoint', label: 'an OpenDocument presentation (.odp)', twin: 'pptx',
    mediaTypes: ['application/vnd.oasis.opendocument.presentation', 'application/vnd.oasis.opendocument.presentation-template'], extensions: ['.odp', '.otp'],
  },
};

export const FORMATS_OF = (kind: OfficeKind): LegacyFormat[] => (Object.keys(FORMATS) as LegacyFormat[]).filter((f) => FORMATS[f].kind === kind);

/** What the first bytes say: a format, `ole2` for a compound file whose directory they do not
 *  reach (or that holds none of the three streams), or null for none of these. */
export type Sniffed = LegacyFormat | 'ole2' | null;

const ODF_MIME = /^application\/vnd\.oasis\.opendocument\.(text|spreadsheet|presentation)(?:-template)?$/;
const ODF_FORMAT: Record<string, LegacyFormat> = { text: 'odt', spreadsheet: 'ods', presentation: 'odp' };

/** The OLE2 root streams that make each binary format. Word first: a Word file may embed a workbook. */
const OLE2_STREAMS: Array<[LegacyFormat, string[]]> = [
  ['doc', ['worddocument']],
  ['ppt', ['powerpoint document']],
  ['xls', ['workbook', 'book']],
];

function formatOfStreams(names: string[]): LegacyFormat | null {
  const lower = new Set(names.map((n) => n.toLowerCase()));
  for (const [format, streams] of OLE2_STREAMS) if (streams.some((s) => lower.has(s))) return format;
  return null;
}

/** The mimetype entry ODF puts first, stored, in its zip. */
function odfFormat(b: Buffer): LegacyFormat | null {
  if (b.length < 38 || b.readUInt32LE(0) !== 0x04034b50) return null;
  const nameLen = b.readUInt16LE(26);
  const extraLen = b.readUInt16LE(28);
  if (b.toString('latin1', 30, 30 + nameLen) !== 'mimetype') return null;
  const size = Math.min(b.readUInt32LE(18), 200);
  const start = 30 + nameLen + extraLen;
  const mime = b.toString('latin1', start, Math.min(b.length, start + size)).trim();
  const m = ODF_MIME.exec(mime);
  return m ? ODF_FORMAT[m[1]!]! : null;
}

export function formatOfPeek(bytes: Buffer): Sniffed {
  if (bytes.subarray(0, 5).toString('latin1') === '{\\rtf') return 'rtf';
  const odf = odfFormat(bytes);
  if (odf) return odf;
  if (!isOle2(bytes)) return null;
  const dir = firstDirectoryOffset(bytes);
  if (!dir || dir.offset >= bytes.length) return 'ole2';
  // Only the first directory sector is at hand: the root's streams are usually listed there.
  const names: string[] = [];
  const end = Math.min(bytes.length, dir.offset + dir.sectorBytes);
  for (let at = dir.offset; at + 128 <= end; at += 128) {
    const e = parseEntry(bytes, at);
    if (e) names.push(e.name);
  }
  return formatOfStreams(names) ?? 'ole2';
}

/**
 * Whether an Office endpoint of `kind` takes these bytes as one of its legacy formats: true for
 * a format of its kind, and for a compound file whose first bytes do not reach its directory
 * (the count, which reads the whole directory, then refuses one of another kind with a 415).
 */
export function acceptsLegacy(peek: Peek, kind: OfficeKind): boolean {
  const sniffed = formatOfPeek(peek.bytes);
  if (sniffed === null) return false;
  return sniffed === 'ole2' || FORMATS[sniffed].kind === kind;
}

/** The format of a file on disk, reading a compound file's whole directory; null for a file that
 *  is none of the legacy formats (an OOXML package, a CSV). A compound file that holds no Word,
 *  Excel or PowerPoint stream is refused: 422 for an encrypted OOXML package, 415 otherwise. */
export async function formatOfFile(file: string, head: Buffer): Promise<LegacyFormat | null> {
  const sniffed = formatOfPeek(head);
  if (!isOle2(head)) return sniffed === 'ole2' ? null : sniffed;
  return withOle2(file, async (f) => {
    const names = f.rootChildren().map((e) => e.name);
    const format = formatOfStreams(names);
    if (format) return format;
    if (names.includes('EncryptedPackage')) {
      throw new ApiError('invalid_document', 'the document is password-protected (an encrypted Office package): remove the password and send it again');
    }
    throw new ApiError('input_format_mismatch', 'this compound (OLE2) file holds no Word, Excel or PowerPoint document: no endpoint converts it');
  });
}

/** 415 naming the endpoint of the kind this format belongs to. */
export function wrongKind(format: LegacyFormat, kind: OfficeKind): ApiError {
  const label = { word: 'a Word document', excel: 'a spreadsheet', powerpoint: 'a presentation' }[kind];
  return new ApiError('input_format_mismatch', `this is ${FORMATS[format].label}, not ${label}: send it to /v1/convert/${FORMATS[format].kind}`);
}
