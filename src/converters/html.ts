// HTML → Markdown: decode the bytes (BOM, <meta charset>, detection; shared/charset.ts), then
// the shared HTML→Markdown step with options.baseUrl so relative links become absolute, and the
// page's main content alone when options.main_content is true (a URL conversion's default).
// Priced as one page, counted in bytes of the file (DESIGN.md §3).
import { readFile, stat } from 'node:fs/promises';
import { ApiError } from '../errors.js';
import { bomOf, checkTextSize, declaredInMarkup, decodeText } from './shared/charset.js';
import { htmlToMarkdown } from './shared/html-to-md.js';
import type { Converter, Count, ConvertResult, Peek } from './types.js';

// The tags a browser's MIME sniffer takes as HTML, plus the common structural ones.
const HTML_TAG = /<(?:!doctype\s+html|html|head|body|meta|title|script|style|iframe|h[1-6]|div|p|table|a|b|br|font|span|ul|ol|article|section|main|!--)(?=[\s>/])/i;

export function looksLikeHtml(peek: Peek): boolean {
  const bom = bomOf(peek.bytes);
  let head: string;
  if (bom && bom.encoding.startsWith('utf-16')) {
    head = decodeText(peek.bytes.subarray(0, peek.bytes.length & ~1));
  } else {
    if (peek.bytes.includes(0)) return false;
    head = peek.bytes.toString('latin1');
  }
  return HTML_TAG.test(head);
}

export const htmlConverter: Converter = {
  kind: 'html',
  mediaTypes: ['text/html', 'application/xhtml+xml'],
  extensions: ['.html', '.htm', '.xhtml'],

  accepts: looksLikeHtml,

  async count(path: string): Promise<Count> {
    const { size } = await stat(path);
    return { pages: 1, units: size };
  },

  async convert(path, options, ctx): Promise<ConvertResult> {
    const cancelled = (): ApiError => new ApiError('invalid_document', 'The conversion was cancelled.');
    if (ctx.signal.aborted) throw cancelled();
    checkTextSize((await stat(path)).size, 'HTML file');
    let buf: Buffer;
    try {
      buf = await readFile(path, { signal: ctx.signal });
    } catch (err) {
      if (ctx.signal.aborted) throw cancelled();
      throw new ApiError('invalid_document', `The HTML file could not be read: ${(err as Error).message}`);
    }
    const html = decodeText(buf, declaredInMarkup(buf));
    if (ctx.signal.aborted) throw cancelled();
    let markdown: string;
    try {
      markdown = htmlToMarkdown(html, { baseUrl: options.baseUrl, mainContent: options.main_content ?? false });
    } catch (err) {
      throw new ApiError('invalid_document', `The HTML could not be converted: ${(err as Error).message}`);
    }
    ctx.progress(1, 1);
    return { markdown, pageCount: 1, mime: 'text/html' };
  },
};
