// The image converter's work (image.ts is its shell): sharp, mupdf and tesseract run here, so
// this module is loaded only where conversions and counts run — the pool's threads.
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import * as mupdf from '../shared/mupdf.js';
import sharp, { type Channels, type FormatEnum, type Metadata, type Sharp } from 'sharp';
import { ApiError } from '../../errors.js';
import { describeImage, dominantColours, parseExif } from './describe.js';
import { describeWithVision, withoutVision } from '../pdf/vision.js';
import { escapeInline, netpbm, ocrLanguages, ocrMarkdown, recognize } from '../shared/ocr.js';
import { estimateLineHeight, ocrScaleLimit, READABLE_LINE } from '../shared/text-size.js';
import type { ConvertContext, ConvertOptions, ConvertResult } from '../types.js';
import { sniff } from './format.js';

const MAX_PIXELS = 100_000_000;
const MAX_SIDE = 30_000;
/** Frames that do not look like text are scaled up when shorter than this. */
const MIN_OCR_HEIGHT = 1000;

function readHead(file: string, n: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(n);
    return buf.subarray(0, readSync(fd, buf, 0, n, 0));
  } finally {
    closeSync(fd);
  }
}

function checkSize(width: number, height: number): void {
  if (!(width > 0 && height > 0)) throw new ApiError('invalid_document', 'The image has no pixels.');
  if (width > MAX_SIDE || height > MAX_SIDE || width * height > MAX_PIXELS) {
    throw new ApiError('invalid_document', `The image is ${width} × ${height} px; at most ${MAX_SIDE} px a side and ${MAX_PIXELS / 1e6} megapixels are accepted.`);
  }
}

export function asInvalid(err: unknown, what: string): Error {
  if (err instanceof ApiError) return err;
  if (err instanceof Error && err.name === 'AbortError') return err;
  return new ApiError('invalid_document', `${what}: ${err instanceof Error ? err.message : String(err)}`);
}

interface Source { input: string | Buffer; frames: number; meta: Metadata }

/** BMP, decoded by mupdf after its header's size passed the guard; PNG bytes come out. */
function decodeBmp(file: string): Buffer {
  checkSize(...bmpSize(readHead(file, 26)));
  const image = new mupdf.Image(readFileSync(file));
  try {
    const pix = image.toPixmap();
    try {
      return Buffer.from(pix.asPNG());
    } finally {
      pix.destroy();
    }
  } finally {
    image.destroy();
  }
}

function bmpSize(head: Buffer): [number, number] {
  const core = head.readUInt32LE(14) === 12;
  const width = core ? head.readUInt16LE(18) : head.readInt32LE(18);
  const height = Math.abs(core ? head.readUInt16LE(20) : head.readInt32LE(22));
  return [width, height];
}

/** Frames of the image, from its header only. */
export async function countFrames(file: string): Promise<number> {
  const head = readHead(file, 64);
  const format = sniff(head);
  if (format === 'bmp') { checkSize(...bmpSize(head)); return 1; }
  return (await openSource(file)).frames;
}

async function openSource(file: string): Promise<Source> {
  const format = sniff(readHead(file, 64));
  if (!format) throw new ApiError('invalid_document', 'The file is not a PNG, JPEG, WebP, GIF, BMP or TIFF image.');
  try {
    // mupdf gives BMP pixels an alpha channel; BMP has no transparency worth keeping
    const input = format === 'bmp' ? await sharp(decodeBmp(file)).flatten({ background: '#ffffff' }).png().toBuffer() : file;
    // metadata() reads the header only, so the guard below runs before any pixel is decoded
    const meta = await sharp(input, { limitInputPixels: false }).metadata();
    const frameHeight = meta.pageHeight ?? meta.height;
    checkSize(meta.width, frameHeight);
    const frames = format === 'tiff' || format === 'gif' ? Math.max(1, meta.pages ?? 1) : 1;
    return { input, frames, meta: format === 'bmp' ? { ...meta, format: 'bmp' as keyof FormatEnum } : meta };
  } catch (err) {
    throw asInvalid(err, 'The image could not be read');
  }
}

const frame = (src: Source, page: number): Sharp =>
  sharp(src.input, { page, pages: 1, limitInputPixels: MAX_PIXELS }).rotate();

/**
 * How much to scale a w × h frame before OCR, given the height of its text lines in px (null
 * when the frame does not look like text): small type up to READABLE_LINE, and a frame that is
 * not text up to MIN_OCR_HEIGHT tall; never down, unless the frame is over the limits.
 */
export function ocrScale(w: number, h: number, line: number | null): number {
  const wanted = line !== null ? READABLE_LINE / line : h < MIN_OCR_HEIGHT ? MIN_OCR_HEIGHT / h : 1;
  return Math.min(ocrScaleLimit(w, h), Math.max(1, wanted));
}

/** Raw pixels as the OCR engine reads them: as they are (see netpbm), or a PNG when they are
 *  neither grey nor RGB. */
function forOcr(data: Buffer, info: { width: number; height: number; channels: number }): Promise<Buffer> {
  if (info.channels === 1 || info.channels === 3) return Promise.resolve(netpbm(data, info.width, info.height, info.channels));
  return sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels as Channels } }).png({ compressionLevel: 2 }).toBuffer();
}

/** The frame scaled by `scale` (left as it is within 5 %), as the OCR engine reads it. */
async function sizedForOcr(img: Sharp, width: number, scale: number): Promise<Buffer> {
  const sized = Math.abs(scale - 1) > 0.05 ? img.resize({ width: Math.max(1, Math.round(width * scale)), kernel: 'lanczos3' }) : img;
  const { data, info } = await sized.raw().toBuffer({ resolveWithObject: true });
  return forOcr(data, info);
}

/** One frame in greyscale, sized for OCR by the height of its text lines. */
async function prepareForOcr(src: Source, page: number): Promise<Buffer> {
  const meta = await sharp(src.input, { page, pages: 1, limitInputPixels: false }).metadata();
  checkSize(meta.width, meta.pageHeight ?? meta.height);
  const w = meta.autoOrient?.width ?? meta.width;
  const h = meta.autoOrient?.height ?? meta.pageHeight ?? meta.height;
  const img = frame(src, page).flatten({ background: '#ffffff' }).greyscale();
  // a frame that cannot be scaled up (a giant one is scaled down) needs no look at its pixels
  if (ocrScaleLimit(w, h) <= 1.05) return sizedForOcr(img, w, ocrScale(w, h, null));
  const { data, info } = await img.raw().toBuffer({ resolveWithObject: true });
  const line = info.channels === 1 ? estimateLineHeight(data, info.width, info.height) : null;
  const scale = ocrScale(info.width, info.height, line);
  // read at its size: the pixels in hand are what the engine gets
  if (Math.abs(scale - 1) <= 0.05) return forOcr(data, info);
  return sizedForOcr(sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } }), info.width, scale);
}

async function understand(src: Source, page: number, ocr: Awaited<ReturnType<typeof recognize>>, ctx: ConvertContext): Promise<{ block: string; ai: boolean }> {
  const thumb = await frame(src, page).resize(96, 96, { fit: 'inside' }).removeAlpha().toColourspace('srgb')
    .raw().toBuffer({ resolveWithObject: true });
  let block = describeImage(src.meta, parseExif(src.meta.exif), dominantColours(thumb.data, thumb.info.channels), ocr);
  let ai = false;
  if (ctx.ai) {
    const png = await frame(src, page).resize(1024, 1024, { fit: 'inside', withoutEnlargement: true }).png().toBuffer();
    const text = await describeWithVision(ctx.ai, png,
      'Describe this image in one short paragraph for a reader who cannot see it: what it shows, its layout, and any text in it.',
      ctx.signal);
    if (text) { block = `${escapeInline(text)}\n\n${block}`; ai = true; }
  }
  if (!ai) block += `\n- Described by: the built-in analysis, not a vision model (${withoutVision(ctx.ai)})`;
  return { block, ai };
}

export async function convertImage(file: string, options: ConvertOptions, ctx: ConvertContext): Promise<ConvertResult> {
  const src = await openSource(file);
  const pages: string[] = [];
  let aiUsed = false;
  for (let i = 0; i < src.frames; i++) {
    ctx.signal.throwIfAborted();
    const ocr = await recognize(await prepareForOcr(src, i), ctx.signal, ocrLanguages(options));
    const text = ocrMarkdown(ocr);
    if (options.image_mode === 'understand') {
      const { block, ai } = await understand(src, i, ocr, ctx);
      aiUsed ||= ai;
      pages.push(`## Description\n\n${block}${text ? `\n\n## Text\n\n${text}` : ''}`);
    } else {
      pages.push(text);
    }
    ctx.progress(i + 1, src.frames);
  }
  const markdown = src.frames === 1
    ? pages[0]!
    : pages.map((p, i) => `<!-- page ${i + 1} -->${p ? `\n\n${p}` : ''}`).join('\n\n');
  return {
    markdown: markdown ? `${markdown}\n` : '',
    pages,
    pageCount: src.frames,
    variant: aiUsed ? 'ai_enhanced' : 'standard',
    mime: `image/${src.meta.format === 'jpeg' ? 'jpeg' : src.meta.format}`,
  };
}

