// Legacy and OpenDocument formats for the three Office endpoints: `withLegacyFormats` wraps an
// OOXML converter so that it also takes its kind's older and open formats (Word: .doc, .odt,
// .rtf; Excel: .xls, .ods; PowerPoint: .ppt, .odp). Bytes decide, never the name: a file is
// sniffed (formats.ts), priced from its own structure (count.ts), then LibreOffice turns it into
// its OOXML twin (soffice.ts), which the wrapped converter converts as it converts any upload.
// The charge is the twin's count, never more than the reservation (ConvertResult.units).
// Imports: errors, the converters' shared modules and types; nothing above the converters.
import { open } from 'node:fs/promises';
import { checkZip } from '../shared/zip-limits.js';
import type { ConvertContext, Converter, Count, Peek } from '../types.js';
import { countLegacy } from './count.js';
import { ApiError } from '../../errors.js';
import { FORMATS, FORMATS_OF, acceptsLegacy, formatOfFile, formatOfPeek, wrongKind, type LegacyFormat, type OfficeKind } from './formats.js';
import { requireEngine, toTwin } from './soffice.js';
import { scratchDir } from '../shared/scratch-dir.js';

export { FORMATS, formatOfPeek, type LegacyFormat } from './formats.js';
export { PACKAGES, findSoffice } from './soffice.js';

const HEAD_BYTES = 8192;

async function head(file: string): Promise<Buffer> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await fh.read(buf, 0, HEAD_BYTES, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** The binary format each kind's compound files are. */
const OLE2_FORMAT: Record<OfficeKind, LegacyFormat> = { word: 'doc', excel: 'xls', powerpoint: 'ppt' };

/**
 * The legacy format of a file sent to an endpoint of `kind`; null for the converter's own
 * formats. 415 naming the right endpoint for a format of another kind. `damagedToo`: a compound
 * file whose directory cannot be read is taken as the format its first bytes (or the endpoint)
 * suggest, so that pricing lets it through and its conversion fails that file alone.
 */
async function legacyFormat(file: string, kind: OfficeKind, damagedToo = false): Promise<LegacyFormat | null> {
  const bytes = await head(file);
  let format: LegacyFormat | null;
  try {
    format = await formatOfFile(file, bytes);
  } catch (err) {
    if (!damagedToo || !(err instanceof ApiError) || err.code !== 'invalid_document') throw err;
    const sniffed = formatOfPeek(bytes);
    format = sniffed === 'ole2' || sniffed === null ? OLE2_FORMAT[kind] : sniffed;
  }
  if (format && FORMATS[format].kind !== kind) throw wrongKind(format, kind);
  return format;
}

/** `conv` (an OOXML converter of `kind`) taking its kind's legacy and open formats as well. */
export function withLegacyFormats(kind: OfficeKind, conv: Converter): Converter {
  const formats = FORMATS_OF(kind);
  return {
    kind: conv.kind,
    mediaTypes: [...conv.mediaTypes, ...formats.flatMap((f) => FORMATS[f].mediaTypes)],
    extensions: [...conv.extensions, ...formats.flatMap((f) => FORMATS[f].extensions)],

    accepts(peek: Peek): boolean {
      // A legacy format by its bytes is never taken for OOXML, whatever its name says.
      return formatOfPeek(peek.bytes) === null ? conv.accepts(peek) : acceptsLegacy(peek, kind);
    },

    async count(file, options): Promise<Count> {
      const format = await legacyFormat(file, kind, true);
      if (!format) return conv.count(file, options);
      // Estimate and submit both price here: a missing LibreOffice is a 503 before anything is reserved.
      await requireEngine(kind);
      return countLegacy(file, format);
    },

    async convert(file, options, ctx: ConvertContext) {
      const format = await legacyFormat(file, kind);
      if (!format) return conv.convert(file, options, ctx);
      // LibreOffice has no zip limits of its own: an OpenDocument bomb stops here.
      if (format.startsWith('od')) await checkZip(file, ctx.signal);
      const twin = await toTwin(file, format, { signal: ctx.signal, tmpDir: scratchDir(ctx), watchChild: ctx.watchChild });
      const result = await conv.convert(twin, options, ctx);
      const { units } = await conv.count(twin, options);
      return { ...result, units, mime: FORMATS[format].mediaTypes[0] };
    },
  };
}
