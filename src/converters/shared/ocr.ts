// OCR for scanned PDF pages, figures and images: tesseract.js workers per thread, one per
// language set (at most MAX_WORKERS alive), created on first use and reused, with their models
// read from the @tesseract.js-data packages in node_modules (never the network).
// Callers hand in an image (a bitmap's pixels as `netpbm` writes them, or an encoded PNG, JPEG…)
// and get paragraphs back, laid out by tesseract's own block/paragraph/line analysis;
// `ocrMarkdown` turns them into Markdown paragraphs.
// Contract: call `terminateOcr()` when a thread (or a test) is done, so the process can exit.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import Tesseract from 'tesseract.js';
import { ApiError } from '../../errors.js';
import { DEFAULT_OCR_LANGUAGES, OCR_LANGUAGES, type OcrLanguage } from './ocr-languages.js';
import { FORM_FIELD_RE } from './form-field.js';

export { OCR_LANGUAGES, type OcrLanguage } from './ocr-languages.js';

const require = createRequire(import.meta.url);

/** One recognition may not take longer than this; a stuck worker is killed and replaced. */
const RECOGNIZE_TIMEOUT_MS = 180_000;

/** A thread keeps at most this many workers (one per language set) alive at once. */
const MAX_WORKERS = 2;

/**
 * tesseract.js reads every model of a worker from one folder (`langPath`), while each language
 * package has its own: a folder of this process holds a link to each package's model.
 */
function langFolder(): string {
  const first = path.dirname(require.resolve('@tesseract.js-data/eng/package.json'));
  // named after where the packages are, so every process of one install shares it
  const dir = path.join(os.tmpdir(), `docpipe-tessdata-${createHash('sha256').update(first).digest('hex').slice(0, 16)}`);
  mkdirSync(dir, { recursive: true });
  for (const lang of OCR_LANGUAGES) {
    const link = path.join(dir, `${lang}.traineddata.gz`);
    if (existsSync(link)) continue;
    const pkg = path.dirname(require.resolve(`@tesseract.js-data/${lang}/package.json`));
    try {
      symlinkSync(path.join(pkg, '4.0.0_best_int', `${lang}.traineddata.gz`), link);
    } catch (err) {
      // another thread made it first
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  return dir;
}

/**
 * The worker's options. The language data is the LSTM "best_int" model that
 * @tesseract.js-data/<code> ships (tesseract.js' own choice for LSTM_ONLY); it is gzip-compressed,
 * and `cacheMethod: 'none'` keeps tesseract.js from writing a copy into the working directory.
 * The wasm core is `require`d from tesseract.js-core by the worker script in Node.
 */
export function ocrWorkerOptions(): Partial<Tesseract.WorkerOptions> {
  return {
    langPath: langFolder(),
    gzip: true,
    cacheMethod: 'none',
    logger: () => {},
    errorHandler: () => {},
  };
}

/** The OCR languages of a conversion's options (checked at the edge), English when absent. */
export function ocrLanguages(options: { languages?: readonly string[] }): readonly OcrLanguage[] {
  const known = (options.languages ?? []).filter((l): l is OcrLanguage => (OCR_LANGUAGES as readonly string[]).includes(l));
  return known.length > 0 ? known : DEFAULT_OCR_LANGUAGES;
}

/**
 * A bitmap of 8-bit samples, grey (1 channel) or RGB (3), as a binary PGM or PPM: a header and the
 * pixels as they are. The OCR engine (Leptonica, inside tesseract.js) reads it with a copy,
 * where a PNG is compressed here and inflated again there: mupdf took 61 ms to write a 200 dpi
 * page (1654 × 2339) as PNG, this 0.3 ms; sharp 8.7 ms for a 1275 × 583 scan. The engine's
 * results are the same (the same pixels reach it).
 */
export function netpbm(pixels: Uint8Array, width: number, height: number, channels: number): Buffer {
  if (channels !== 1 && channels !== 3) throw new RangeError(`netpbm: ${channels} channels (1 or 3 only)`);
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new RangeError(`netpbm: a ${width} × ${height} bitmap`);
  }
  if (pixels.length !== width * height * channels) {
    throw new RangeError(`netpbm: ${pixels.length} bytes for ${width} × ${height} × ${channels}`);
  }
  const head = Buffer.from(`${channels === 1 ? 'P5' : 'P6'}\n${width} ${height}\n255\n`, 'latin1');
  const out = Buffer.allocUnsafe(head.length + pixels.length);
  head.copy(out, 0);
  out.set(pixels, head.length);
  return out;
}

/** What `ocrBitmap` reads of a bitmap (a mupdf Pixmap). */
export interface Bitmap {
  getWidth(): number;
  getHeight(): number;
  getStride(): number;
  getNumberOfComponents(): number;
  getAlpha(): number;
  getPixels(): Uint8Array | Uint8ClampedArray;
  asPNG(): Uint8Array;
}

/** True when the bitmap's samples are a layout netpbm writes as they are: grey or RGB without
 *  alpha, rows packed end to end. */
export function netpbmLayout(pix: Omit<Bitmap, 'getPixels' | 'asPNG'>): boolean {
  const n = pix.getNumberOfComponents();
  return pix.getAlpha() === 0 && (n === 1 || n === 3) && pix.getStride() === pix.getWidth() * n;
}

/** A bitmap as the OCR engine reads it: its pixels as they are (see netpbm), copied out of the
 *  bitmap's memory; a PNG for a layout netpbm does not write. */
export function ocrBitmap(pix: Bitmap): Buffer {
  if (netpbmLayout(pix)) {
    const n = pix.getNumberOfComponents();
    const px = pix.getPixels();
    return netpbm(new Uint8Array(px.buffer, px.byteOffset, px.length), pix.getWidth(), pix.getHeight(), n);
  }
  return Buffer.from(pix.asPNG());
}

/** This thread's workers by language set ("deu+eng"), least recently used first. */
const workers = new Map<string, Promise<Tesseract.Worker>>();

function getWorker(languages: readonly OcrLanguage[]): Promise<Tesseract.Worker> {
  const key = [...new Set(languages)].join('+');
  const have = workers.get(key);
  if (have) {
    workers.delete(key);
    workers.set(key, have);
    return have;
  }
  while (workers.size >= MAX_WORKERS) {
    const [oldest, p] = workers.entries().next().value as [string, Promise<Tesseract.Worker>];
    workers.delete(oldest);
    void p.then((w) => w.terminate()).catch(() => {});
  }
  const started = Tesseract.createWorker(key, Tesseract.OEM.LSTM_ONLY, ocrWorkerOptions()).then(async (w) => {
    // tesseract.js defaults to "single block"; full page segmentation finds columns,
    // headings and text inside table cells
    // a fixed resolution also stops tesseract guessing one (and printing that it did)
    await w.setParameters({ tessedit_pageseg_mode: Tesseract.PSM.AUTO, user_defined_dpi: '300' });
    return w;
  });
  workers.set(key, started);
  started.catch(() => { if (workers.get(key) === started) workers.delete(key); });
  return started;
}

/** Stops this thread's OCR workers, if any were started. Safe to call more than once. */
export async function terminateOcr(): Promise<void> {
  const all = [...workers.values()];
  workers.clear();
  for (const p of all) {
    try {
      await (await p).terminate();
    } catch {
      // a worker that failed to start or already died has nothing left to stop
    }
  }
}

export interface OcrLine {
  text: string; x0: number; y0: number; x1: number; y1: number;
  /** Tesseract's estimate of the line's type height (ascender to descender), in pixels. */
  size: number;
  /** The mean confidence of the line's words, 0–100. */
  confidence: number;
}
export interface OcrParagraph { lines: OcrLine[]; x0: number; y0: number; x1: number; y1: number }
export interface OcrResult {
  paragraphs: OcrParagraph[];
  /** Mean word confidence, 0–100. */
  confidence: number;
}

/** Recognises the text in one encoded image (PNG, JPEG, PGM/PPM…) in `languages` (English by default).
 *  Honours `signal` by killing the worker. */
export async function recognize(image: Buffer, signal?: AbortSignal, languages: readonly OcrLanguage[] = DEFAULT_OCR_LANGUAGES): Promise<OcrResult> {
  signal?.throwIfAborted();
  let worker: Tesseract.Worker;
  try {
    worker = await getWorker(languages);
  } catch (err) {
    throw new ApiError('parser_unavailable', `OCR engine failed to start: ${err instanceof Error ? err.message : String(err)}`);
  }
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stop = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ApiError('invalid_document', 'OCR of one image took too long.')), RECOGNIZE_TIMEOUT_MS);
    onAbort = () => reject(signal?.reason ?? new Error('aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  try {
    // the block tree only: the plain text output is never read (it cost 5 ms of a 550 ms scan)
    const job = worker.recognize(image, {}, { blocks: true, text: false });
    const result = await Promise.race([job, stop]);
    return toResult(result.data);
  } catch (err) {
    if (err instanceof ApiError || signal?.aborted) {
      // the job may still be running inside the worker: replace the worker rather than wait
      await terminateOcr();
      throw err;
    }
    throw new ApiError('invalid_document', `OCR could not read the image: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}

function toResult(page: Tesseract.Page): OcrResult {
  const paragraphs: OcrParagraph[] = [];
  let confSum = 0;
  let words = 0;
  for (const block of page.blocks ?? []) {
    for (const para of block.paragraphs) {
      const lines: OcrLine[] = [];
      for (const line of para.lines) {
        let lineConf = 0;
        for (const w of line.words) lineConf += w.confidence;
        confSum += lineConf;
        words += line.words.length;
        const text = line.words.map((w) => w.text).join(' ').trim();
        const size = line.rowAttributes?.rowHeight || line.bbox.y1 - line.bbox.y0;
        const confidence = line.words.length > 0 ? lineConf / line.words.length : 0;
        if (text) lines.push({ text, x0: line.bbox.x0, y0: line.bbox.y0, x1: line.bbox.x1, y1: line.bbox.y1, size, confidence });
      }
      if (lines.length > 0) {
        paragraphs.push({ lines, x0: para.bbox.x0, y0: para.bbox.y0, x1: para.bbox.x1, y1: para.bbox.y1 });
      }
    }
  }
  return { paragraphs, confidence: words > 0 ? confSum / words : 0 };
}

/** Joins wrapped lines: a trailing hyphen before a lower-case letter is a split word. */
export function joinLines(lines: readonly string[]): string {
  let out = '';
  for (const raw of lines) {
    const line = raw.trim();
    if (!line) continue;
    if (out === '') out = line;
    else if (/[\p{L}]-$/u.test(out) && /^\p{Ll}/u.test(line)) out = out.slice(0, -1) + line;
    else if (out.endsWith('\u00ad')) out = out.slice(0, -1) + line;
    else out += ' ' + line;
  }
  return out;
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Escapes what would otherwise start Markdown structure at the beginning of a paragraph. */
function escapeStart(text: string): string {
  return escapeInline(text).replace(/^(#{1,6}\s|[-+>]\s|\d+[.)]\s)/, '\\$1');
}

/**
 * Escapes plain text for Markdown, no more than needed so the text stays readable: `*`, `` ` ``
 * and `\` always; `_` only at a word edge (GFM ignores intraword `_`); `]` only where it could
 * close a link ("](", "][", "]:"); `<` only where it could open a tag or autolink.
 */
export function escapeInline(text: string): string {
  return text
    .replace(/[\\`*]/g, '\\$&')
    .replace(/_/g, (m, at: number, s: string) =>
      /[\p{L}\p{N}]/u.test(s[at - 1] ?? ' ') && /[\p{L}\p{N}]/u.test(s[at + 1] ?? ' ') ? m : '\\_')
    .replace(/\](?=[([:])/g, '\\]')
    .replace(/<(?=[\p{L}/!?])/gu, '\\<');
}

/**
 * A line tesseract read with less confidence than this (the mean of its words') never becomes a
 * heading. Large glyphs that are not letters (a table of math delimiters, a logo, a drawing) come
 * back as short "words" in large type, read at 4–31 % (`AV`, `SII fun`, `{HCO [IN` on a page of
 * LaTeX's encoding guide), where a printed heading reads at 85 % and more.
 */
const HEADING_CONFIDENCE = 70;

/** Bullets as tesseract tends to read them ("•" often comes back as "+", "«" or "©"). */
const OCR_BULLET = /^[•·●▪■◦+*»«©°–-]\s+/;
const OCR_NUMBER = /^(\d{1,3})[.)]\s+/;

/**
 * Markdown from an OCR result, following tesseract's paragraphs. A paragraph is also split
 * where a blank gap or a clear change of type size separates two of its lines (tesseract
 * sometimes lumps a heading with its text). Short paragraphs in clearly larger type, read with
 * confidence, become headings (# at 1.7× the usual height, else ##), unless they are a form's
 * label and value ("Patient Name: …"); lines starting with a bullet or a number become list
 * items.
 */
export function ocrMarkdown(result: OcrResult): string {
  const typical = median(result.paragraphs.flatMap((p) => p.lines.map((l) => l.size))) || 1;
  const blocks: string[] = [];
  let listOpen: 'bullet' | 'number' | null = null;
  const emit = (group: OcrLine[]): void => {
    if (group.length === 0) return;
    const text = joinLines(group.map((l) => l.text));
    const ratio = median(group.map((l) => l.size)) / typical;
    const confident = group.reduce((a, l) => a + l.confidence, 0) / group.length >= HEADING_CONFIDENCE;
    const bullet = OCR_BULLET.exec(text);
    const number = OCR_NUMBER.exec(text);
    let md: string;
    let item: 'bullet' | 'number' | null = null;
    if (ratio >= 1.25 && group.length <= 2 && text.length <= 120 && confident && !FORM_FIELD_RE.test(text)) md = `${ratio >= 1.7 ? '#' : '##'} ${escapeStart(text)}`;
    else if (bullet) { md = `- ${escapeStart(text.slice(bullet[0].length))}`; item = 'bullet'; }
    else if (number) { md = `${number[1]}. ${escapeStart(text.slice(number[0].length))}`; item = 'number'; }
    else md = escapeStart(text);
    if (item && listOpen === item) blocks[blocks.length - 1] += `\n${md}`;
    else blocks.push(md);
    listOpen = item;
  };
  for (const para of result.paragraphs) {
    let group: OcrLine[] = [];
    for (const line of para.lines) {
      const prev = group[group.length - 1];
      const sizeChange = prev !== undefined && Math.max(line.size, prev.size) > Math.min(line.size, prev.size) * 1.2;
      const gap = prev !== undefined && line.y0 - prev.y1 > typical * 1.2;
      const startsItem = OCR_BULLET.test(line.text) || OCR_NUMBER.test(line.text);
      if (prev && (sizeChange || gap || startsItem)) { emit(group); group = []; }
      group.push(line);
    }
    emit(group);
  }
  return blocks.filter((b) => b.trim() !== '').join('\n\n');
}
