// Figures (raster images placed on a text page): where they are, their captions, and their
// Markdown. Every figure becomes `![Figure N](page-P-figure-K)` (N counts over the converted
// document, K within the page), followed by its caption when a "Figure 3: …" line sits just
// above or below it. `describe` adds a one-paragraph description (size, text OCR'd from the
// figure, or the vision model's description when one is configured); quality max adds the
// figure's OCR'd text.
import * as mupdf from '../shared/mupdf.js';
import sharp from 'sharp';
import { joinLines, netpbm, netpbmLayout, type OcrLanguage, recognize } from '../shared/ocr.js';
import { estimateLineHeight, ocrScaleLimit, READABLE_LINE } from '../shared/text-size.js';
import type { ConvertContext } from '../types.js';
import type { ImageBox, PageModel } from './extract.js';
import { escapeText } from './inline.js';
import { byY0ThenX0, type Frag, type Item, textOf } from './model.js';
import { describeWithVision, withoutVision } from './vision.js';

const CAPTION_RE = /^(fig(ure)?\.?|image|chart|diagram|photo|plate|illustration|exhibit)\s*[\dIVXivx]+\b/i;
/** How far from the figure a caption may start, in points. */
const CAPTION_REACH = 36;

export interface Figure {
  number: number;
  page: number;
  k: number;
  box: ImageBox;
  caption: string | null;
}

/** Figures of the page and the fragments left once their captions are taken out. */
export function planFigures(page: PageModel, frags: Frag[], firstNumber: number): { figures: Figure[]; items: Item[]; frags: Frag[] } {
  const area = page.width * page.height;
  const boxes = page.images.filter((b) => {
    const w = b.x1 - b.x0, h = b.y1 - b.y0;
    return w >= 24 && h >= 24 && w * h < area * 0.8;
  }).sort(byY0ThenX0);
  const taken = new Set<Frag>();
  const figures: Figure[] = boxes.map((box, i) => {
    const overlaps = (f: Frag): boolean => f.x1 > box.x0 && f.x0 < box.x1;
    const first = frags.find((f) => !taken.has(f) && overlaps(f) && CAPTION_RE.test(textOf(f.chars).trim()) &&
      ((f.y0 >= box.y1 - 2 && f.y0 - box.y1 <= CAPTION_REACH) || (f.y1 <= box.y0 + 2 && box.y0 - f.y1 <= CAPTION_REACH)));
    let caption: string | null = null;
    if (first) {
      const lines = [first];
      taken.add(first);
      // a caption may wrap: take the lines right below it in the same size
      for (;;) {
        const last = lines[lines.length - 1]!;
        const next = frags.find((f) => !taken.has(f) && overlaps(f) && Math.abs(f.size - last.size) < 0.6 &&
          f.y0 > last.y0 && f.y0 - last.y1 <= last.size * 0.5);
        if (!next || lines.length >= 4) break;
        lines.push(next);
        taken.add(next);
      }
      caption = joinLines(lines.map((f) => textOf(f.chars)));
    }
    return { number: firstNumber + i, page: page.number, k: i + 1, box, caption };
  });
  const items: Item[] = figures.map((f, i) => ({ kind: 'figure', index: i, x0: f.box.x0, y0: f.box.y0, x1: f.box.x1, y1: f.box.y1 }));
  return { figures, items, frags: frags.filter((f) => !taken.has(f)) };
}

/** A figure's pixels as OCR reads them (see netpbm), upscaled when its type is small so OCR can
 *  read it, and the same pixels as PNG for the vision model, encoded only when asked for. */
interface FigureImage { ocr: Buffer; png(): Promise<Buffer> }

async function figureImage(image: mupdf.Image): Promise<FigureImage> {
  let pix = image.toPixmap();
  let pixels: Buffer;
  let w: number, h: number, channels: number;
  try {
    const cs = pix.getColorSpace();
    if (!cs || !(cs.isGray() || cs.isRGB()) || !netpbmLayout(pix)) {
      const rgb = pix.convertToColorSpace(mupdf.ColorSpace.DeviceRGB, false);
      pix.destroy();
      pix = rgb;
    }
    w = pix.getWidth();
    h = pix.getHeight();
    channels = pix.getNumberOfComponents();
    const px = pix.getPixels();
    pixels = Buffer.from(new Uint8Array(px.buffer, px.byteOffset, px.length)); // a copy: the pixmap goes
  } finally {
    pix.destroy();
  }
  // grey or RGB without alpha from here on (netpbm refuses anything else)
  const as = (data: Buffer, width: number, height: number, n: number): FigureImage => ({
    ocr: netpbm(data, width, height, n),
    png: () => sharp(data, { raw: { width, height, channels: n as 1 | 3 } }).png().toBuffer(),
  });
  const most = ocrScaleLimit(w, h);
  if (most <= 1.05) return as(pixels, w, h, channels);
  const { data, info } = await sharp(pixels, { raw: { width: w, height: h, channels: channels as 1 | 3 } })
    .greyscale().raw().toBuffer({ resolveWithObject: true });
  const line = info.channels === 1 ? estimateLineHeight(data, info.width, info.height) : null;
  // a figure that does not look like text keeps the rule by its height
  const wanted = line !== null ? READABLE_LINE / line : h >= 600 ? 1 : Math.min(1200, h * 3) / h;
  const scale = Math.min(most, wanted);
  if (scale <= 1.05) return as(pixels, w, h, channels);
  const big = await sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } })
    .resize({ height: Math.round(h * scale), kernel: 'lanczos3' }).raw().toBuffer({ resolveWithObject: true });
  return as(big.data, big.info.width, big.info.height, big.info.channels);
}

export interface FigureOptions {
  describe: boolean;
  ocrText: boolean;
  /** The languages of the figure's text. */
  languages: readonly OcrLanguage[];
  ctx: ConvertContext;
}

/** Markdown of one figure; `aiUsed` is set when the vision model wrote the description. */
export async function figureMarkdown(f: Figure, opts: FigureOptions): Promise<{ markdown: string; aiUsed: boolean }> {
  const parts = [`![Figure ${f.number}](page-${f.page}-figure-${f.k})`];
  if (f.caption) parts.push(`*${escapeText(f.caption)}*`);
  const image = f.box.image;
  let aiUsed = false;
  if (image && (opts.describe || opts.ocrText)) {
    const bitmap = await figureImage(image);
    const ocr = await recognize(bitmap.ocr, opts.ctx.signal, opts.languages);
    const text = ocr.paragraphs.map((p) => joinLines(p.lines.map((l) => l.text))).join(' ').trim();
    const readable = text !== '' && ocr.confidence >= 50;
    if (opts.describe) {
      const wPt = Math.round(f.box.x1 - f.box.x0), hPt = Math.round(f.box.y1 - f.box.y0);
      let description = `A ${image.getWidth()} × ${image.getHeight()} px raster image, shown at ${wPt} × ${hPt} pt on page ${f.page}.`;
      description += readable ? ` Text in it: “${text}”.` : ' No text was recognised in it.';
      if (opts.ctx.ai) {
        const ai = await describeWithVision(opts.ctx.ai, await bitmap.png(),
          'Describe this figure from a document in one short paragraph for a reader who cannot see it. Include any text, numbers or trends it shows.',
          opts.ctx.signal);
        if (ai) { description = ai; aiUsed = true; }
      }
      if (!aiUsed) description += ` (A built-in description: ${withoutVision(opts.ctx.ai)}.)`;
      parts.push(`> **Figure ${f.number} description:** ${escapeText(description)}`);
    } else if (readable) {
      parts.push(`> **Text in figure ${f.number}:** ${escapeText(text)}`);
    }
  }
  return { markdown: parts.join('\n\n'), aiUsed };
}
