// The PDF converter's work (pdf.ts is its shell): everything here runs mupdf, so it is loaded
// only where conversions and counts run — the pool's threads — and never by the event loop,
// which sniffs a PDF by its first bytes alone.
import { ocrLanguages } from '../shared/ocr.js';
import { selectPages } from '../shared/page-range.js';
import { countOfPages } from './page-count.js';
import type { ConvertContext, ConvertOptions, ConvertResult, Count } from '../types.js';
import { extractPage, type PageModel } from './extract.js';
import { asDocumentError, openPdf } from './open.js';
import { joinPages } from './continued.js';
import { readOutline } from './outline.js';
import { convertPage } from './page.js';
import { buildStats, type DocStats, pageSignals, samplePages } from './stats.js';
import type * as mupdf from '../shared/mupdf.js';

export { asDocumentError };

/** The pages `options.pages` selects, counted from the document's page tree. */
export function countPdf(file: string, options: ConvertOptions): Count {
  const opened = openPdf(file);
  try {
    return countOfPages(opened.pageCount, options);
  } finally {
    opened.close();
  }
}

/**
 * Font statistics of the document, from a sample of its pages. The sampled pages in `keep` are
 * read as the conversion reads them (vector boxes, links) and their models kept for it, so a
 * short document is not read twice; the others are dropped once counted.
 */
function collectStats(doc: mupdf.Document, pageCount: number, signal: AbortSignal, keep: ReadonlySet<number>): { stats: DocStats; models: Map<number, PageModel> } {
  const signals = [];
  const models = new Map<number, PageModel>();
  try {
    for (const n of samplePages(pageCount)) {
      signal.throwIfAborted();
      const page = doc.loadPage(n - 1);
      try {
        const model = extractPage(page, doc, n, keep.has(n) ? { vectors: true, links: true } : {});
        signals.push(pageSignals(model));
        if (keep.has(n)) models.set(n, model);
        else model.destroy();
      } finally {
        page.destroy();
      }
    }
  } catch (err) {
    for (const m of models.values()) m.destroy();
    throw err;
  }
  return { stats: buildStats(signals), models };
}

export async function convertPdf(file: string, options: ConvertOptions, ctx: ConvertContext): Promise<ConvertResult> {
  const quality = options.quality ?? 'standard';
  const opened = openPdf(file);
  try {
    const selected = selectPages(options.pages, opened.pageCount);
    const ocr = options.ocr === true;
    // the sampled pages are read once when the conversion needs no pixels of them
    const reuse = quality === 'standard' && options.figures !== 'describe';
    const sampled = quality === 'fast' || ocr || selected.length === 0 ? null
      : collectStats(opened.doc, opened.pageCount, ctx.signal, reuse ? new Set(selected) : new Set());
    const stats = sampled?.stats ?? null;
    const models = sampled?.models ?? new Map<number, PageModel>();
    // the author's heading tree, when the document has one (not read for plain text)
    const outline = stats ? readOutline(opened.doc) : [];
    const pages: string[] = [];
    let figures = 0;
    let aiUsed = false;
    try {
      for (const [i, number] of selected.entries()) {
        ctx.signal.throwIfAborted();
        const model = models.get(number);
        models.delete(number);
        const out = await convertPage({
          doc: opened.doc,
          number,
          quality,
          tableMode: quality === 'max' ? 'accurate' : options.table_mode ?? 'fast',
          figures: options.figures ?? 'placeholder',
          ocr,
          stats,
          outline,
          languages: ocrLanguages(options),
          firstFigure: figures + 1,
          model,
          ctx,
        });
        pages.push(out.markdown);
        figures += out.figures;
        aiUsed ||= out.aiUsed;
        ctx.progress(i + 1, selected.length);
      }
    } finally {
      for (const m of models.values()) m.destroy();
    }
    const markdown = joinPages(pages, selected);
    return {
      markdown: markdown ? `${markdown}\n` : '',
      pages,
      pageCount: selected.length,
      variant: aiUsed ? 'ai_enhanced' : 'standard',
      mime: 'application/pdf',
    };
  } finally {
    opened.close();
  }
}

