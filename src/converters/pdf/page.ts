// One PDF page to Markdown, by the route the options choose:
// - OCR (ocr: true, or a page with no usable text layer outside quality fast): the page is
//   rendered to a greyscale bitmap (at a higher resolution when its type is small) and read
//   by tesseract.
// - fast: the text layer as plain paragraphs in mupdf's order, bare page numbers dropped.
// - standard / max: running heads dropped, ruled (and for accurate/max, aligned) tables,
//   figures with captions, column-aware reading order, headings, lists, inline styles.
// Contract: the page and every mupdf object made for it are destroyed before this returns.
import * as mupdf from '../shared/mupdf.js';
import { ocrBitmap, ocrLanguages, ocrMarkdown, recognize, type OcrLanguage } from '../shared/ocr.js';
import { estimateLineHeight, READABLE_LINE } from '../shared/text-size.js';
import type { ConvertContext } from '../types.js';
import { extractPage, type PageModel } from './extract.js';
import { figureMarkdown, planFigures } from './figures.js';
import { readingOrder } from './layout.js';
import { renderSections } from './markdown.js';
import type { Frag, Item } from './model.js';
import { type OutlineEntry, OutlineMatcher } from './outline.js';
import { type DocStats, withoutRunningHeads } from './stats.js';
import { alignedTables, ruledTables } from './tables.js';

export interface PageJob {
  doc: mupdf.Document;
  /** 1-based. */
  number: number;
  quality: 'fast' | 'standard' | 'max';
  tableMode: 'fast' | 'accurate';
  figures: 'placeholder' | 'describe';
  ocr: boolean;
  stats: DocStats | null;
  /** The languages OCR reads the page and its figures in. */
  languages: readonly OcrLanguage[];
  /** The document's outline (empty: it has none). */
  outline: readonly OutlineEntry[];
  /** The document-wide number the page's first figure gets. */
  firstFigure: number;
  /** The page as the statistics pass read it (with vector boxes and links, no image pixels),
   *  when it did: used instead of reading the page again, unless pixels are wanted. Destroyed
   *  here either way. */
  model?: PageModel;
  ctx: ConvertContext;
}

export interface PageOutput { markdown: string; figures: number; aiUsed: boolean; ocred: boolean }

const OCR_DPI = 200;
/** The longest side of a page bitmap handed to OCR, in pixels. */
const MAX_SIDE = 5000;

/** True when the text layer is missing or garbage and the page looks like a scan. */
export function needsOcr(m: PageModel): boolean {
  if (m.inkChars > 0 && m.badChars / m.inkChars >= 0.3) return true;
  if (m.inkChars >= 20) return false;
  const covered = m.images.reduce((a, b) => a + (b.x1 - b.x0) * (b.y1 - b.y0), 0);
  return covered >= m.width * m.height * 0.3;
}

const render = (page: mupdf.Page, scale: number): mupdf.Pixmap =>
  page.toPixmap(mupdf.Matrix.scale(scale, scale), mupdf.ColorSpace.DeviceGray, false, true);

/** The height of the text lines of a greyscale page bitmap, in px (null: not text). */
function lineHeight(pix: mupdf.Pixmap): number | null {
  if (pix.getNumberOfComponents() !== 1 || pix.getStride() !== pix.getWidth()) return null;
  const px = pix.getPixels();
  return estimateLineHeight(new Uint8Array(px.buffer, px.byteOffset, px.length), pix.getWidth(), pix.getHeight());
}

async function ocrPage(page: mupdf.Page, signal: AbortSignal, languages: readonly OcrLanguage[]): Promise<string> {
  const [x0, y0, x1, y1] = page.getBounds();
  const most = MAX_SIDE / Math.max(1, x1 - x0, y1 - y0);
  const scale = Math.min(OCR_DPI / 72, most);
  let pix = render(page, scale);
  let image: Buffer;
  try {
    // fine print (under about 8 pt at OCR_DPI) is rendered again, large enough to read
    const line = lineHeight(pix);
    const better = line === null ? scale : Math.min(most, 4 * scale, (scale * READABLE_LINE) / line);
    if (better > scale * 1.05) {
      const again = render(page, better);
      pix.destroy();
      pix = again;
    }
    image = ocrBitmap(pix);
  } finally {
    pix.destroy();
  }
  return ocrMarkdown(await recognize(image, signal, languages));
}

/** A fragment as a reading-order item (module-level, like the comparators in model.ts). */
const textItem = (frag: Frag): Item => ({ kind: 'text', frag, x0: frag.x0, y0: frag.y0, x1: frag.x1, y1: frag.y1 });
const noFigure = (): string => '';

export async function convertPage(job: PageJob): Promise<PageOutput> {
  const page = job.doc.loadPage(job.number - 1);
  try {
    const fast = job.quality === 'fast';
    const wantPixels = !fast && (job.figures === 'describe' || job.quality === 'max');
    const read = job.model && !job.ocr && !fast && !wantPixels ? job.model : null;
    if (job.model && !read) job.model.destroy();
    if (job.ocr) return { markdown: await ocrPage(page, job.ctx.signal, job.languages), figures: 0, aiUsed: false, ocred: true };
    const model = read ?? extractPage(page, job.doc, job.number, { keepImages: wantPixels, vectors: !fast, links: !fast });
    try {
      if (needsOcr(model)) {
        if (fast) return { markdown: '', figures: 0, aiUsed: false, ocred: false };
        return { markdown: await ocrPage(page, job.ctx.signal, job.languages), figures: 0, aiUsed: false, ocred: true };
      }
      if (fast) {
        const items: Item[] = withoutRunningHeads(null, model.frags, model.height).map(textItem);
        const markdown = renderSections([items], { stats: null, structure: false, links: [], figure: noFigure });
        return { markdown, figures: 0, aiUsed: false, ocred: false };
      }
      return await structuredPage(job, model);
    } finally {
      model.destroy();
    }
  } finally {
    page.destroy();
  }
}

async function structuredPage(job: PageJob, model: PageModel): Promise<PageOutput> {
  let frags = withoutRunningHeads(job.stats, model.frags, model.height);
  const ruled = ruledTables(frags, model.vectors, model.width * model.height);
  frags = ruled.frags;
  const tables = [...ruled.tables];
  const aligned = alignedTables(frags, { sparse: job.tableMode === 'accurate' });
  frags = aligned.frags;
  tables.push(...aligned.tables);
  const plan = planFigures(model, frags, job.firstFigure);
  const items: Item[] = [
    ...plan.frags.map(textItem),
    ...tables,
    ...plan.items,
  ];
  const figureMd: string[] = [];
  let aiUsed = false;
  for (const f of plan.figures) {
    job.ctx.signal.throwIfAborted();
    const out = await figureMarkdown(f, { describe: job.figures === 'describe', ocrText: job.quality === 'max', languages: job.languages, ctx: job.ctx });
    figureMd.push(out.markdown);
    aiUsed ||= out.aiUsed;
  }
  const markdown = renderSections(readingOrder(items, model.width), {
    stats: job.stats, structure: true, links: model.links, figure: (i) => figureMd[i] ?? '',
    outline: job.outline.length > 0 ? new OutlineMatcher(job.outline as OutlineEntry[], job.number) : null,
    firstPage: job.number === 1,
  });
  return { markdown, figures: plan.figures.length, aiUsed, ocred: false };
}
