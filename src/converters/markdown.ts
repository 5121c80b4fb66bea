// Markdown → HTML and Markdown → text: the "render" kinds. Their input already is Markdown;
// the registry's post-steps (shared/markdown.ts) render it into the requested formats.
import { readFile, stat } from 'node:fs/promises';
import { checkTextSize } from './shared/charset.js';
import type { Converter, ConverterKind, Count, Peek } from './types.js';

/** Text, not binary: no NUL byte in the first bytes (UTF-16 is refused: send UTF-8 Markdown). */
export function looksLikeText(peek: Peek): boolean {
  return !peek.bytes.includes(0);
}

/** A render source is one page whose units are its bytes (it is never priced: renders cost 0). */
export function renderCount(bytes: number): Count {
  return { pages: 1, units: bytes };
}

/** The Markdown of a render source's bytes: size-checked, decoded as UTF-8, BOM dropped. */
export function markdownOf(bytes: Buffer): string {
  checkTextSize(bytes.length, 'Markdown file');
  return bytes.toString('utf8').replace(/^\uFEFF/, '');
}

function renderConverter(kind: ConverterKind): Converter {
  return {
    kind,
    mediaTypes: ['text/markdown', 'text/x-markdown', 'text/plain'],
    extensions: ['.md', '.markdown', '.mdown', '.mkd', '.txt'],
    accepts: looksLikeText,
    async count(path) {
      return renderCount((await stat(path)).size);
    },
    async convert(path, _options, ctx) {
      ctx.signal.throwIfAborted();
      // Checked before reading: a huge file is refused without loading it.
      checkTextSize((await stat(path)).size, 'Markdown file');
      return { markdown: markdownOf(await readFile(path)), pageCount: 1 };
    },
  };
}

export const markdownHtmlConverter = renderConverter('markdown-html');
export const markdownTextConverter = renderConverter('markdown-text');
