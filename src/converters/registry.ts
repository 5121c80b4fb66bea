// Picks the converter for an endpoint, sniffs sources against it, and runs a conversion with the
// shared post-steps (clean-up once, then Markdown → text / HTML / pages), so that no converter
// repeats them. Converter modules load lazily: a kind whose module fails to load answers 503
// parser_unavailable instead of taking the whole service down.
import { closeSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { ApiError } from '../errors.js';
import { cleanMarkdown, markdownToHtml, markdownToText } from './shared/markdown.js';
import { markdownOf } from './markdown.js';
import { formatOfPeek } from './legacy/formats.js';
import type { ConvertContext, ConvertOptions, ConvertResult, Converter, ConverterKind, OutputFormat, Peek } from './types.js';

const loaders: Record<ConverterKind, () => Promise<Converter>> = {
  'pdf': () => import('./pdf.js').then((m) => m.pdfConverter),
  'image': () => import('./image.js').then((m) => m.imageConverter),
  'word': () => import('./word.js').then((m) => m.wordConverter),
  'excel': () => import('./excel.js').then((m) => m.excelConverter),
  'powerpoint': () => import('./powerpoint.js').then((m) => m.powerpointConverter),
  'html': () => import('./html.js').then((m) => m.htmlConverter),
  'url': () => import('./url.js').then((m) => m.urlConverter),
  'text': () => import('./text.js').then((m) => m.textConverter),
  'markdown-html': () => import('./markdown.js').then((m) => m.markdownHtmlConverter),
  'markdown-text': () => import('./markdown.js').then((m) => m.markdownTextConverter),
};

export const KINDS = Object.keys(loaders) as ConverterKind[];

/** The endpoint path segment (after /v1/convert/) of each kind. */
export const ENDPOINTS: Record<ConverterKind, string> = {
  'pdf': 'pdf', 'image': 'image', 'word': 'word', 'excel': 'excel', 'powerpoint': 'powerpoint',
  'html': 'html', 'url': 'url', 'text': 'text', 'markdown-html': 'markdown/html', 'markdown-text': 'markdown/text',
};

export const LABELS: Record<ConverterKind, string> = {
  'pdf': 'a PDF', 'image': 'an image', 'word': 'a Word document (.docx, .doc, .odt or .rtf)',
  'excel': 'a spreadsheet (.xlsx, .xls, .ods or .csv)', 'powerpoint': 'a presentation (.pptx, .ppt or .odp)', 'html': 'an HTML document', 'url': 'a URL', 'text': 'a text file',
  'markdown-html': 'a Markdown file', 'markdown-text': 'a Markdown file',
};

export function isRender(kind: ConverterKind): boolean {
  return kind === 'markdown-html' || kind === 'markdown-text';
}

export function defaultFormats(kind: ConverterKind): OutputFormat[] {
  if (kind === 'markdown-html') return ['html'];
  if (kind === 'markdown-text') return ['text'];
  return ['markdown'];
}

const loaded = new Map<ConverterKind, Promise<Converter>>();

export function converterFor(kind: ConverterKind): Promise<Converter> {
  let p = loaded.get(kind);
  if (!p) {
    p = loaders[kind]().catch((err: unknown) => {
      loaded.delete(kind);
      throw new ApiError('parser_unavailable', `The ${kind} converter could not be loaded: ${(err as Error).message}`);
    });
    loaded.set(kind, p);
  }
  return p;
}

export const PEEK_BYTES = 8192;

/** The peek of bytes held in memory. */
export function peekBytes(data: Buffer, name: string, mime?: string): Peek {
  return { bytes: data.subarray(0, PEEK_BYTES), name, mime };
}

/** peekFile for a converter thread, where blocking its own loop costs nothing and a read sent to
 *  libuv's threads would cost two thread wake-ups each way. */
export function peekFileSync(path: string, name: string, mime?: string): Peek {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(PEEK_BYTES);
    return peekBytes(buf.subarray(0, readSync(fd, buf, 0, PEEK_BYTES, 0)), name, mime);
  } finally {
    closeSync(fd);
  }
}

export async function peekFile(path: string, name: string, mime?: string): Promise<Peek> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(PEEK_BYTES);
    const { bytesRead } = await fh.read(buf, 0, PEEK_BYTES, 0);
    return peekBytes(buf.subarray(0, bytesRead), name, mime);
  } finally {
    await fh.close();
  }
}

/** Refuses with 415 a source whose bytes are not what the endpoint converts. */
export async function sniff(kind: ConverterKind, peek: Peek): Promise<Converter> {
  const conv = await converterFor(kind);
  if (!conv.accepts(peek)) throw await mismatch(kind, peek);
  return conv;
}

/** The 415 for a source sent to the wrong endpoint: it names the endpoint that takes the bytes,
 *  or says that none does. HTML and text come last: they take nearly any text. */
async function mismatch(kind: ConverterKind, peek: Peek): Promise<ApiError> {
  if (formatOfPeek(peek.bytes) === 'ole2') {
    // Which of the three it is shows only further into the file: all three endpoints take it.
    return new ApiError('input_format_mismatch', `"${peek.name}" is an Office 97–2003 file (.doc, .xls or .ppt), not ${LABELS[kind]}.`, {}, {
      hint: 'Send it to /v1/convert/word, /v1/convert/excel or /v1/convert/powerpoint, whichever its kind is.',
    });
  }
  const order: ConverterKind[] = ['pdf', 'word', 'excel', 'powerpoint', 'image', 'html', 'text'];
  for (const other of order) {
    if (other === kind) continue;
    const conv = await converterFor(other).catch(() => undefined);
    if (!conv?.accepts(peek)) continue;
    const to = `/v1/convert/${ENDPOINTS[other]}`;
    return new ApiError('input_format_mismatch', `"${peek.name}" is ${LABELS[other]}, not ${LABELS[kind]}: send it to ${to}.`, {}, {
      hint: `Send this file to ${to}.`,
    });
  }
  return new ApiError('input_format_mismatch', `"${peek.name}" is not ${LABELS[kind]}, and no endpoint converts what it is.`, {}, {
    hint: 'See the README for the formats each endpoint converts.',
  });
}

/** The converter (other than URL) whose media types include `mime`, or whose magic bytes fit. */
export async function converterForMime(peek: Peek): Promise<Converter> {
  const order: ConverterKind[] = ['pdf', 'word', 'excel', 'powerpoint', 'image', 'html', 'text'];
  const mime = (peek.mime ?? '').split(';')[0]!.trim().toLowerCase();
  for (const kind of order) {
    const conv = await converterFor(kind);
    if (mime && conv.mediaTypes.includes(mime) && conv.accepts(peek)) return conv;
  }
  for (const kind of order) {
    const conv = await converterFor(kind);
    if (conv.accepts(peek)) return conv;
  }
  throw new ApiError('input_format_mismatch', `No converter takes "${peek.name}" (${mime || 'unknown type'}).`);
}

export interface Output {
  format: OutputFormat;
  mime: string;
  content: string;
}

export interface RunResult {
  outputs: Output[];
  pageCount: number;
  /** ConvertResult.units: the priced units converted, when the converter knows them exactly. */
  units?: number;
  variant: 'standard' | 'ai_enhanced';
  /** The outputs (by index) a pool thread wrote to the paths of Task.stage. */
  staged?: number[];
}

const OUTPUT_MIME: Record<OutputFormat, string> = {
  markdown: 'text/markdown; charset=utf-8',
  text: 'text/plain; charset=utf-8',
  html: 'text/html; charset=utf-8',
  pages: 'application/json',
};

/**
 * The error with a message fit to store and show: parsers quote the document's own bytes in
 * their messages, and a NUL among them makes the Problem unstorable in Postgres (jsonb refuses
 * \u0000), which left the file running forever. Controls and lone surrogates become U+FFFD.
 */
export function printable(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  // eslint-disable-next-line no-control-regex
  const clean = err.message.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\uFFFD');
  if (clean === err.message) return err;
  if (err instanceof ApiError) {
    const copy = new ApiError(err.code, clean, err.headers, err.overrides);
    copy.stack = err.stack;
    return copy;
  }
  err.message = clean;
  return err;
}

/** Converts one source and produces every requested format from its Markdown. */
export async function runConversion(
  kind: ConverterKind, path: string, peek: Peek, options: ConvertOptions, ctx: Omit<ConvertContext, 'convertFile'>,
): Promise<RunResult> {
  const conv = await converterFor(kind);
  const fullCtx: ConvertContext = {
    ...ctx,
    convertFile: async (p, pk, o) => (await converterForMime(pk)).convert(p, o, fullCtx),
  };
  let result: ConvertResult;
  try {
    result = await conv.convert(path, options, fullCtx);
  } catch (err) {
    throw printable(err);
  }
  return outputsOf(kind, result, options);
}

/** Renders Markdown held in memory (a render source sent inline): no file is read or written. */
export function renderInMemory(kind: ConverterKind, data: Buffer, options: ConvertOptions): RunResult {
  if (!isRender(kind)) throw new TypeError(`only Markdown renders run from memory, not ${kind}`);
  try {
    return outputsOf(kind, { markdown: markdownOf(data), pageCount: 1 }, options);
  } catch (err) {
    throw printable(err);
  }
}

/** Every requested format, produced from the converter's Markdown. */
function outputsOf(kind: ConverterKind, result: ConvertResult, options: ConvertOptions): RunResult {
  // U+0000 is never content (CommonMark replaces it with U+FFFD), and Postgres text and jsonb
  // cannot hold it: an output with one could not be stored at all.
  const raw = result.markdown.includes('\u0000') ? result.markdown.replace(/\u0000/g, '\uFFFD') : result.markdown;
  const markdown = isRender(kind) ? raw : cleanMarkdown(raw);
  const outputs: Output[] = options.formats.map((format) => ({
    format,
    mime: OUTPUT_MIME[format],
    content: format === 'markdown' ? markdown
      : format === 'text' ? markdownToText(markdown)
      : format === 'html' ? markdownToHtml(markdown)
      : JSON.stringify((result.pages ?? [markdown]).map((p) => p.replace(/\u0000/g, '\uFFFD')).map((p) => (isRender(kind) ? p : cleanMarkdown(p)))),
  }));
  return { outputs, pageCount: result.pageCount, units: result.units, variant: result.variant ?? 'standard' };
}
