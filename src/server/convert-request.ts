// Turns a convert (or estimate) request — JSON or multipart — into staged sources on disk and
// validated options. Strict: an unknown field, a wrong type or an option the endpoint does not
// take is a 400 naming the field, never silently ignored.
import { writeFile } from 'node:fs/promises';
import { removeFile } from '../store/blobs.js';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { OCR_LANGUAGES } from '../converters/shared/ocr-languages.js';
import { ApiError } from '../errors.js';
import { defaultFormats, isRender } from '../converters/registry.js';
import { parsePageRanges } from '../converters/shared/page-range.js';
import type { ConvertOptions, ConverterKind, ConvertRequest, OutputFormat, StagedSource } from '../types.js';
import type { MultipartBody } from './body.js';
import { onCleanup, type Ctx } from './respond.js';

export const MAX_SOURCES = 100;

const FORMATS: OutputFormat[] = ['markdown', 'text', 'html', 'pages'];
const COMMON = ['file', 'files', 'upload', 'uploads', 'formats', 'store', 'metadata', 'name'];

/** JSON fields each endpoint takes, beyond the common ones; the first is the inline-source field. */
const FIELDS: Record<ConverterKind, string[]> = {
  'pdf': ['pages', 'quality', 'table_mode', 'figures', 'ocr', 'languages'],
  'image': ['image_mode', 'languages'],
  'word': [],
  'excel': [],
  'powerpoint': [],
  'html': ['html', 'htmls', 'text', 'texts', 'base_url', 'main_content'],
  'url': ['url', 'urls', 'main_content'],
  'text': ['text', 'texts'],
  'markdown-html': ['markdown', 'text', 'texts'],
  'markdown-text': ['markdown', 'text', 'texts'],
};

const INLINE_EXT: Partial<Record<ConverterKind, { ext: string; mime: string }>> = {
  'html': { ext: '.html', mime: 'text/html' },
  'url': { ext: '.url', mime: 'text/uri-list' },
  'text': { ext: '.txt', mime: 'text/plain' },
  'markdown-html': { ext: '.md', mime: 'text/markdown' },
  'markdown-text': { ext: '.md', mime: 'text/markdown' },
};

function bad(detail: string): ApiError {
  return new ApiError('invalid_request', detail);
}

function stringList(body: Record<string, unknown>, one: string, many: string): string[] {
  const out: string[] = [];
  if (body[one] !== undefined) {
    if (typeof body[one] !== 'string') throw bad(`"${one}" must be a string.`);
    out.push(body[one] as string);
  }
  if (body[many] !== undefined) {
    const v = body[many];
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw bad(`"${many}" must be an array of strings.`);
    out.push(...(v as string[]));
  }
  return out;
}

function oneOf<T extends string>(name: string, v: unknown, allowed: readonly T[]): T | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !allowed.includes(v as T)) throw bad(`"${name}" must be one of ${allowed.join(', ')}.`);
  return v as T;
}

function bool(name: string, v: unknown): boolean | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'boolean') return v;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw bad(`"${name}" must be true or false.`);
}

function formatsOf(kind: ConverterKind, v: unknown): OutputFormat[] {
  if (v === undefined) return defaultFormats(kind);
  let list: unknown = v;
  if (typeof v === 'string') list = v.trim().startsWith('[') ? safeJson('formats', v) : v.split(',').map((s) => s.trim());
  if (!Array.isArray(list) || list.length === 0) throw bad('"formats" must be a non-empty array.');
  const out: OutputFormat[] = [];
  for (const f of list as unknown[]) {
    if (!FORMATS.includes(f as OutputFormat)) throw bad(`"formats" entries must be one of ${FORMATS.join(', ')}.`);
    if (!out.includes(f as OutputFormat)) out.push(f as OutputFormat);
  }
  if (isRender(kind) && out.includes('pages')) throw bad('"pages" output is not available for Markdown rendering.');
  return out;
}

/** At most this many OCR languages per request (each loads a model into every OCR worker). */
const MAX_LANGUAGES = 5;

function languagesOf(v: unknown): string[] | undefined {
  if (v === undefined) return undefined;
  let list: unknown = v;
  if (typeof v === 'string') list = v.trim().startsWith('[') ? safeJson('languages', v) : v.split(',').map((s) => s.trim());
  if (!Array.isArray(list) || list.length === 0 || list.some((x) => typeof x !== 'string')) {
    throw bad('"languages" must be a non-empty array of language codes such as ["eng", "deu"].');
  }
  if (list.length > MAX_LANGUAGES) throw bad(`"languages" takes at most ${MAX_LANGUAGES} languages; got ${list.length}.`);
  const unknown = (list as string[]).filter((l) => !(OCR_LANGUAGES as readonly string[]).includes(l));
  if (unknown.length > 0) {
    throw bad(`Unknown OCR language ${unknown.map((l) => JSON.stringify(l.slice(0, 20))).join(', ')}: "languages" takes ${OCR_LANGUAGES.join(', ')}.`);
  }
  return [...new Set(list as string[])];
}

function safeJson(name: string, s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    throw bad(`"${name}" is not valid JSON.`);
  }
}

function optionsOf(kind: ConverterKind, body: Record<string, unknown>): ConvertOptions {
  const formats = formatsOf(kind, body.formats);
  if (body.pages !== undefined && typeof body.pages !== 'string') throw bad('"pages" must be a string such as "1-3,5,8-".');
  const pages = body.pages === undefined ? undefined : parsePageRanges(body.pages as string);
  const quality = oneOf('quality', body.quality, ['fast', 'standard', 'max'] as const);
  const tableMode = oneOf('table_mode', body.table_mode, ['fast', 'accurate'] as const);
  const figures = oneOf('figures', body.figures, ['placeholder', 'describe'] as const);
  const ocr = bool('ocr', body.ocr);
  const imageMode = oneOf('image_mode', body.image_mode, ['ocr', 'understand'] as const);
  const languages = languagesOf(body.languages);
  // A web page is read for its article; an HTML document a user made is kept whole.
  const mainContent = bool('main_content', body.main_content) ?? (kind === 'url' ? true : undefined);
  if (body.base_url !== undefined && (typeof body.base_url !== 'string' || !URL.canParse(body.base_url))) {
    throw bad('"base_url" must be an absolute URL.');
  }
  // Only the options given are set, in this order. Setting them all and deleting the absent
  // ones left every request's options in V8's dictionary mode (slow properties: a hash lookup
  // for each read, and a slow path for each spread of them).
  const o: ConvertOptions = { formats };
  if (pages !== undefined) o.pages = pages;
  if (quality !== undefined) o.quality = quality;
  if (tableMode !== undefined) o.table_mode = tableMode;
  if (figures !== undefined) o.figures = figures;
  if (ocr !== undefined) o.ocr = ocr;
  if (imageMode !== undefined) o.image_mode = imageMode;
  if (languages !== undefined) o.languages = languages;
  if (mainContent !== undefined) o.main_content = mainContent;
  if (body.base_url !== undefined) o.baseUrl = body.base_url as string;
  return o;
}

function checkFields(kind: ConverterKind, body: Record<string, unknown>): void {
  const allowed = new Set([...COMMON, ...FIELDS[kind]]);
  for (const k of Object.keys(body)) {
    if (!allowed.has(k)) throw bad(`Unknown field "${k}" for /v1/convert/${kind.replace('-', '/')}.`);
  }
}

function common(kind: ConverterKind, body: Record<string, unknown>) {
  const metadata = typeof body.metadata === 'string' ? safeJson('metadata', body.metadata) : body.metadata;
  if (metadata !== undefined && (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))) {
    throw bad('"metadata" must be an object.');
  }
  let name: string | undefined;
  if (body.name !== undefined) {
    if (typeof body.name !== 'string') throw bad('"name" must be a string.');
    // eslint-disable-next-line no-control-regex
    name = body.name.replace(/[\u0000-\u001f\u007f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '').trim();
    if (name === '' || name.length > 255) throw bad('"name" must be 1 to 255 characters.');
  }
  return {
    ...(name !== undefined ? { name } : {}),
    fileRefs: stringList(body, 'file', 'files'),
    uploadRefs: stringList(body, 'upload', 'uploads'),
    options: optionsOf(kind, body),
    metadata,
    store: bool('store', body.store) ?? false,
  };
}

/** A JSON body: inline sources (text, html, url) are written to files in `tmpDir`; Markdown to render
 *  stays in memory. */
export async function fromJson(ctx: Ctx, kind: ConverterKind, body: unknown, tmpDir: string): Promise<ConvertRequest> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw bad('The body must be a JSON object.');
  const b = body as Record<string, unknown>;
  checkFields(kind, b);
  const inline: string[] = [];
  if (kind === 'url') inline.push(...stringList(b, 'url', 'urls'));
  if (kind === 'html') inline.push(...stringList(b, 'html', 'htmls'));
  if (kind === 'markdown-html' || kind === 'markdown-text') inline.push(...stringList(b, 'markdown', '__none__'));
  if (FIELDS[kind].includes('text')) inline.push(...stringList(b, 'text', 'texts'));
  const req: ConvertRequest = { kind, sources: [], ...common(kind, b) };
  // Counted and checked before anything is written: a refused body stages nothing.
  checkSources(req, inline.length);
  if (kind === 'url') for (const u of inline) checkUrl(u);
  const ext = INLINE_EXT[kind];
  for (let i = 0; i < inline.length; i++) {
    if (isRender(kind)) {
      const data = Buffer.from(inline[i]!, 'utf8');
      req.sources.push({ name: `input-${i + 1}${ext?.ext ?? ''}`, mime: ext?.mime, path: '', bytes: data.length, data });
      continue;
    }
    const p = path.join(tmpDir, `in_${randomBytes(12).toString('hex')}`);
    onCleanup(ctx, () => removeFile(p));
    await writeFile(p, inline[i]!, 'utf8');
    const name = kind === 'url' ? urlName(inline[i]!) : `input-${i + 1}${ext?.ext ?? ''}`;
    req.sources.push({ name, mime: ext?.mime, path: p, bytes: Buffer.byteLength(inline[i]!) });
  }
  return finalCheck(req);
}

/** A multipart body: the `file` parts are the sources, the other fields the options. */
export function fromMultipart(kind: ConverterKind, mp: MultipartBody): ConvertRequest {
  const fields: Record<string, unknown> = { ...mp.fields };
  checkFields(kind, fields);
  for (const f of mp.files) {
    if (f.field !== 'file' && f.field !== 'files') throw bad(`Unexpected file field "${f.field}": send documents as "file".`);
  }
  const req: ConvertRequest = {
    kind,
    sources: mp.files.map((f) => ({ name: f.name, mime: f.mime, path: f.path, bytes: f.bytes, head: f.head, tail: f.tail })),
    ...common(kind, fields),
  };
  return finalCheck(req);
}

function finalCheck(req: ConvertRequest): ConvertRequest {
  checkSources(req, req.sources.length);
  return req;
}

/** The request's source count (`inline` sources plus named files and uploads) and options. */
function checkSources(req: ConvertRequest, inline: number): void {
  const n = inline + req.fileRefs.length + req.uploadRefs.length;
  if (n === 0) throw bad('No source: send a "file" part, or name the sources in the JSON body.');
  if (n > MAX_SOURCES) throw bad(`At most ${MAX_SOURCES} sources per request; got ${n}.`);
  if (req.options.pages && req.kind !== 'pdf') throw bad('"pages" applies to PDF conversions only.');
}

function checkUrl(u: string): void {
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    throw bad(`"${u.slice(0, 200)}" is not an absolute URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad(`Only http and https URLs are fetched, not ${url.protocol}`);
}

function urlName(u: string): string {
  try {
    const url = new URL(u);
    const last = url.pathname.split('/').filter(Boolean).pop();
    return last ? decodeURIComponent(last).slice(0, 200) : url.hostname;
  } catch {
    return 'page';
  }
}
