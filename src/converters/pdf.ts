// The PDF converter (DESIGN.md §9): mupdf structured text to Markdown, one page at a time.
// Routes by `quality`:
//   fast     – text layer only: plain paragraphs, no headings, lists, tables or OCR of scans.
//   standard – (default) full layout analysis: headings from the document's font sizes, lists,
//              bold/italic/monospace, links, ruled tables and tables aligned by whitespace
//              (table_mode accurate also takes in sparse rows), tables cut by a page break
//              joined, figures with captions, running heads removed, columns read in order,
//              and pages without a usable text layer OCR'd.
//   max      – standard with table_mode accurate, plus the OCR'd text of figures.
// `ocr: true` OCRs every page instead of reading its text layer. Pages are separated by
// `<!-- page N -->` markers; `pages` holds each converted page's Markdown on its own.
// Memory stays bounded: each page's mupdf objects are destroyed before the next is loaded, and
// the document statistics come from a fixed-size sample of pages (stats.ts).
import { ApiError } from '../errors.js';
import type { ConvertContext, ConvertOptions, ConvertResult, Converter, Count, FileEnd, Peek } from './types.js';
import { lazyModule } from './shared/lazy-module.js';
import { countOfPages, quickPageCount } from './pdf/page-count.js';

/** The module that runs mupdf (a pool thread's, never the event loop's). */
const work = lazyModule(() => import('./pdf/convert.js'));

export const pdfConverter: Converter = {
  kind: 'pdf',
  mediaTypes: ['application/pdf', 'application/x-pdf'],
  extensions: ['.pdf'],

  accepts(peek: Peek): boolean {
    return peek.bytes.subarray(0, 1024).includes('%PDF-');
  },

  async count(file: string, options: ConvertOptions): Promise<Count> {
    return (await work()).countPdf(file, options);
  },

  async quickCount(file: string, options: ConvertOptions, end?: FileEnd): Promise<Count | undefined> {
    const pages = await quickPageCount(file, end);
    return pages === undefined ? undefined : countOfPages(pages, options);
  },

  async convert(file: string, options: ConvertOptions, ctx: ConvertContext): Promise<ConvertResult> {
    const { convertPdf, asDocumentError } = await work();
    try {
      return await convertPdf(file, options, ctx);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      if (err instanceof ApiError) throw err;
      throw asDocumentError(err, 'The PDF could not be converted');
    }
  },
};
