// The description block of `image_mode: understand`, built without any model: format and
// size, EXIF camera and date, dominant colours, and a guess of what the image is (a document,
// a diagram or a photo) from its colours and the amount of text OCR found in it.
import type { Metadata } from 'sharp';
import { escapeInline, type OcrResult } from '../shared/ocr.js';

export interface ExifFields { make?: string; model?: string; taken?: string; software?: string; lens?: string; gps?: boolean }

const TAGS: Record<number, keyof ExifFields> = {
  0x010f: 'make', 0x0110: 'model', 0x0131: 'software', 0x0132: 'taken', 0x9003: 'taken', 0xa434: 'lens',
};

/** Reads the few ASCII fields worth showing from a raw EXIF block (a TIFF structure). */
export function parseExif(raw: Buffer | undefined): ExifFields {
  const out: ExifFields = {};
  if (!raw) return out;
  const base = raw.subarray(0, 6).toString('latin1') === 'Exif\0\0' ? 6 : 0;
  const le = raw.subarray(base, base + 2).toString('latin1') === 'II';
  const u16 = (o: number): number => (le ? raw.readUInt16LE(o) : raw.readUInt16BE(o));
  const u32 = (o: number): number => (le ? raw.readUInt32LE(o) : raw.readUInt32BE(o));
  const seen = new Set<number>();
  const walk = (ifd: number): void => {
    if (seen.has(ifd) || seen.size > 8 || base + ifd + 2 > raw.length) return;
    seen.add(ifd);
    const n = u16(base + ifd);
    for (let i = 0; i < n && i < 500; i++) {
      const e = base + ifd + 2 + i * 12;
      if (e + 12 > raw.length) return;
      const tag = u16(e), type = u16(e + 2), count = u32(e + 4);
      if (tag === 0x8769) walk(u32(e + 8));
      else if (tag === 0x8825) out.gps = true;
      const key = TAGS[tag];
      if (key && type === 2 && count > 0 && count < 256) {
        const at = count <= 4 ? e + 8 : base + u32(e + 8);
        if (at + count > raw.length) continue;
        const text = raw.subarray(at, at + count).toString('latin1').replace(/\0.*$/s, '').trim();
        // DateTimeOriginal (0x9003) wins over the file's DateTime (0x0132)
        if (text && (key !== 'taken' || tag === 0x9003 || !out.taken)) (out as Record<string, string>)[key] = text;
      }
    }
  };
  try {
    walk(u32(base + 4));
  } catch {
    // a truncated EXIF block yields what was read before the end
  }
  return out;
}

export interface Colour { hex: string; share: number }

/** The most common colours of a small raw RGB thumbnail, in 4-bit-per-channel bins. */
export interface Colours {
  top: Colour[];
  /** Share of pixels in the 8 most common colour bins: high for flat-colour graphics. */
  topEightShare: number;
  /** Share of light pixels (a page's paper). */
  lightShare: number;
  /** Share of clearly coloured (not grey) pixels. */
  colourShare: number;
}

export function dominantColours(rgb: Buffer, channels: number): Colours {
  const bins = new Map<number, { n: number; r: number; g: number; b: number }>();
  let total = 0, light = 0, coloured = 0;
  for (let i = 0; i + 2 < rgb.length; i += channels) {
    const r = rgb[i]!, g = rgb[i + 1]!, b = rgb[i + 2]!;
    const key = ((r >> 4) << 8) | ((g >> 4) << 4) | (b >> 4);
    const bin = bins.get(key) ?? { n: 0, r: 0, g: 0, b: 0 };
    bin.n++; bin.r += r; bin.g += g; bin.b += b;
    bins.set(key, bin);
    total++;
    if (0.299 * r + 0.587 * g + 0.114 * b > 200) light++;
    if (Math.max(r, g, b) - Math.min(r, g, b) > 48) coloured++;
  }
  const sorted = [...bins.values()].sort((a, b) => b.n - a.n);
  const hex = (v: number): string => Math.round(v).toString(16).padStart(2, '0');
  const top = sorted.slice(0, 3).map((bn) => ({ hex: `#${hex(bn.r / bn.n)}${hex(bn.g / bn.n)}${hex(bn.b / bn.n)}`, share: bn.n / total }));
  const topEightShare = sorted.slice(0, 8).reduce((s, bn) => s + bn.n, 0) / Math.max(1, total);
  return { top, topEightShare, lightShare: light / Math.max(1, total), colourShare: coloured / Math.max(1, total) };
}

export type ImageKind = 'document' | 'diagram' | 'photo';

export function guessKind(words: number, confidence: number, colours: Colours): ImageKind {
  if (words >= 5 && confidence >= 60 && colours.lightShare >= 0.5 && colours.colourShare < 0.1) return 'document';
  if (colours.topEightShare >= 0.85) return 'diagram';
  return 'photo';
}

const KIND_TEXT: Record<ImageKind, string> = {
  document: 'a document (mostly text on a light background)',
  diagram: 'a diagram, chart or illustration (few flat colours)',
  photo: 'a photo or other continuous-tone picture',
};

/** The Markdown description block. */
export function describeImage(meta: Metadata, exif: ExifFields, colours: Colours, ocr: OcrResult): string {
  const words = ocr.paragraphs.reduce((n, p) => n + p.lines.reduce((m, l) => m + l.text.split(/\s+/).filter(Boolean).length, 0), 0);
  const kind = guessKind(words, ocr.confidence, colours);
  const width = meta.autoOrient?.width ?? meta.width;
  const height = meta.autoOrient?.height ?? meta.height;
  const lines = [
    `- Format: ${meta.format.toUpperCase()}, ${width} × ${height} px, ${meta.channels} channel${meta.channels === 1 ? '' : 's'} (${meta.space}${meta.hasAlpha ? ', with transparency' : ''})`,
    `- Looks like: ${KIND_TEXT[kind]}`,
    `- Dominant colours: ${colours.top.map((c) => `${c.hex} (${Math.round(c.share * 100)} %)`).join(', ')}`,
  ];
  const camera = [exif.make, exif.model].filter(Boolean).join(' ');
  if (camera) lines.push(`- Camera: ${camera}`);
  if (exif.lens) lines.push(`- Lens: ${exif.lens}`);
  if (exif.taken) lines.push(`- Taken: ${exif.taken}`);
  if (exif.software) lines.push(`- Software: ${exif.software}`);
  if (exif.gps) lines.push('- Location: GPS coordinates are embedded');
  lines.push(words > 0
    ? `- Text: ${words} word${words === 1 ? '' : 's'} recognised (mean confidence ${Math.round(ocr.confidence)} %)`
    : '- Text: none recognised');
  return lines.map(escapeInline).join('\n');
}
