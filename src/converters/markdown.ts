// Markdown → HTML and Markdown → text: the "render" kinds. Their input already is Markdown;
// the registry's post-steps (shared/markdown.ts) render it into the requested formats.
import { readFile } from 'node:fs/promises';
import { stat } from 'node:fs/promises';
import { checkTextSize } from './shared/charset.js';
import type { Converter, ConverterKind, Peek } from './types.js';

/** Text, not binary: no NUL byte in the first bytes (UTF-16 is refused: send UTF-8 Markdown). */
export function looksLikeText(peek: Peek): boolean {
  return !peek.bytes.includes(0);
}

function renderConverter(kind: ConverterKind): Converter {
  return {
    kind,
    mediaTypes: ['text/markdown', 'text/x-markdown', 'text/plain'],
    extensions: ['.md', '.markdown', '.mdown', '.mkd', '.txt'],
    accepts: looksLikeText,
    async count(path) {
      return { pages: 1, units: (await stat(path)).size };
    },
    async convert(path, _options, ctx) {
      ctx.signal.throwIfAborted();
      checkTextSize((await stat(path)).size, 'Markdown file');
      const markdown = (await readFile(path, 'utf8')).replace(/^\uFEFF/, '');
      return { markdown, pageCount: 1 };
    },
  };
}

export const markdownHtmlConverter = renderConverter('markdown-html');
export const markdownTextConverter = renderConverter('markdown-text');
