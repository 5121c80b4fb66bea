// Plain text → Markdown. Text passes through as the author wrote it: Markdown-significant
// characters (`*`, `_`, `#`, `|`, backticks, `<`) and trailing spaces (a hard line break in
// Markdown) are never escaped or trimmed. Only the encoding (detected, see shared/charset.ts),
// the byte-order mark, line endings (CRLF/CR → LF) and runs of blank lines (at most one blank
// line between blocks, except inside fenced code) are normalised.
import { readFile, stat } from 'node:fs/promises';
import { ApiError } from '../errors.js';
import { bomOf, checkTextSize, decodeText } from './shared/charset.js';
import type { Converter, Count, ConvertResult, Peek } from './types.js';

function checkSignal(signal: AbortSignal): void {
  if (signal.aborted) throw new ApiError('invalid_document', 'The conversion was cancelled.');
}

/** True when the bytes look like text: no NUL byte, unless a UTF-16/32 byte-order mark says why. */
export function looksLikeText(peek: Peek): boolean {
  const bom = bomOf(peek.bytes);
  if (bom && bom.encoding !== 'utf-8') return true;
  return !peek.bytes.includes(0);
}

/** Line endings to LF; runs of blank lines to one, outside fenced code blocks. */
export function normaliseText(text: string): string {
  const lines = text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let fence: string | null = null;
  let blank = 0;
  for (const line of lines) {
    const m = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence) {
      out.push(line);
      if (m && m[1]!.startsWith(fence) && line.trim() === m[1]) fence = null;
      continue;
    }
    if (m) fence = m[1]!;
    if (line.trim() === '') {
      blank++;
      if (blank === 1) out.push('');
      continue;
    }
    blank = 0;
    out.push(line);
  }
  while (out.length > 0 && out[0] === '') out.shift();
  while (out.length > 0 && out[out.length - 1] === '') out.pop();
  return out.join('\n');
}

export const textConverter: Converter = {
  kind: 'text',
  mediaTypes: ['text/plain', 'text/markdown', 'text/x-markdown'],
  extensions: ['.txt', '.text', '.log'],

  accepts: looksLikeText,

  async count(path: string): Promise<Count> {
    const { size } = await stat(path);
    return { pages: 1, units: size };
  },

  async convert(path, _options, ctx): Promise<ConvertResult> {
    checkSignal(ctx.signal);
    checkTextSize((await stat(path)).size, 'text file');
    let buf: Buffer;
    try {
      buf = await readFile(path, { signal: ctx.signal });
    } catch (err) {
      checkSignal(ctx.signal);
      throw new ApiError('invalid_document', `The text file could not be read: ${(err as Error).message}`);
    }
    checkSignal(ctx.signal);
    const markdown = normaliseText(decodeText(buf));
    ctx.progress(1, 1);
    return { markdown, pageCount: 1, mime: 'text/plain' };
  },
};
