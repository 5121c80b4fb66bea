// The PDF converter (DESIGN.md §9): mupdf structured text to Markdown, one page at a time.
// Routes by `quality`:
//   fast     – text layer only: plain paragraphs, no headings, lists, tables or OCR of scans.
//   standard – (default) full layout analysis: headings from the document's font sizes, lists,
//              bold/italic/monospace, links, ruled tables (plus aligned ones with
//              table_mode accurate), figures with captions, running heads removed, columns
//              read in order, and pages without a usable text layer OCR'd.
//   max      – standard, plus aligned (whitespace) tables and the OCR'd text of figures.
// `ocr: true` OCRs every page instead of reading its text layer. Pages are separated by
// `<!-- page N -->` markers; `pages` holds each converted page's Markdown on its own.
// Memory stays bounded: each page's mupdf objects are destroyed before the next is loaded, and
// the document statistics come from a fixed-size sample of pages (stats.ts).
import { ApiError } from '../errors.js';
import { selectPages } from './shared/page-range.js';
import type { ConvertContext, ConvertOptions, ConvertResult, Converter, Count, Peek } from './types.js';
import { extractPage } from './pdf/extract.js';
import { asDocumentError, openPdf } from './pdf/open.js';
import { convertPage } from './pdf/page.js';
import { buildStats, type DocStats, pageSignals, samplePages } from './pdf/stats.js';
import type * as mupdf from 'mupdf';

/** Font statistics of the document, from a sample of its pages. */
function collectStats(doc: mupdf.Document, pageCount: number, signal: AbortSignal): DocStats {
  const signals = [];
  for (const n of samplePages(pageCount)) {
    signal.throwIfAborted();
    const page = doc.loadPage(n - 1);
    try {
      const model = extractPage(page, doc, n);
      signals.push(pageSignals(model));
      model.destroy();
    } finally {
      page.destroy();
    }
  }
  return buildStats(signals);
}

async function convertPdf(file: string, options: ConvertOptions, ctx: ConvertContext): Promise<ConvertResult> {
  const quality = options.quality ?? 'standard';
  const opened = openPdf(file);
  try {
    const selected = selectPages(options.pages, opened.pageCount);
    const ocr = options.ocr === true;
    const stats = quality === 'fast' || ocr || selected.length === 0 ? null : collectStats(opened.doc, opened.pageCount, ctx.signal);
    const pages: string[] = [];
    let figures = 0;
    let aiUsed = false;
    for (const [i, number] of selected.entries()) {
      ctx.signal.throwIfAborted();
      const out = await convertPage({
        doc: opened.doc,
        number,
        quality,
        tableMode: quality === 'max' ? 'accurate' : options.table_mode ?? 'fast',
        figures: options.figures ?? 'placeholder',
        ocr,
        stats,
        firstFigure: figures + 1,
        ctx,
      });
      pages.push(out.markdown);
      figures += out.figures;
      aiUsed ||= out.aiUsed;
      ctx.progress(i + 1, selected.length);
    }
    const markdown = pages.map((md, i) => `<!-- page ${selected[i]} -->${md ? `\n\n${md}` : ''}`).join('\n\n');
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

export const pdfConverter: Converter = {
  kind: 'pdf',
  mediaTypes: ['application/pdf', 'application/x-pdf'],
  extensions: ['.pdf'],

  accepts(peek: Peek): boolean {
    return peek.bytes.subarray(0, 1024).includes('%PDF-');
  },

  async count(file: string, options: ConvertOptions): Promise<Count> {
    const opened = openPdf(file);
    try {
      const pages = selectPages(options.pages, opened.pageCount).length;
      return { pages, units: pages };
    } finally {
      opened.close();
    }
  },

  async convert(file: string, options: ConvertOptions, ctx: ConvertContext): Promise<ConvertResult> {
    try {
      return await convertPdf(file, options, ctx);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      if (err instanceof ApiError) throw err;
      throw asDocumentError(err, 'The PDF could not be converted');
    }
  },
};
