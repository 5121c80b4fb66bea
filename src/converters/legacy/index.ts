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
import { FORMATS, FORMATS_OF, acceptsLegacy, formatOfFile, wrongKind, type LegacyFormat, type OfficeKind } from './formats.js';
import { requireEngine, toTwin } from './soffice.js';

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

/** The legacy format of a file sent to an endpoint of `kind`; null for the converter's own
 *  formats. 415 naming the right endpoint for a format of another kind. */
async function legacyFormat(file: string, kind: OfficeKind): Promise<LegacyFormat | null> {
  const format = await formatOfFile(file, await head(file));
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
      return acceptsLegacy(peek, kind) || conv.accepts(peek);
    },

    async count(file, options): Promise<Count> {
      const format = await legacyFormat(file, kind);
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
      const twin = await toTwin(file, format, { signal: ctx.signal, tmpDir: ctx.tmpDir, watchChild: ctx.watchChild });
      const result = await conv.convert(twin, options, ctx);
      const { units } = await conv.count(twin, options);
      return { ...result, units, mime: FORMATS[format].mediaTypes[0] };
    },
  };
}
