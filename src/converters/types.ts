// The seam every converter implements (DESIGN.md §9, STYLE.md "Converters").
// A converter is one object per input kind. It never trusts the client's file name alone:
// `accepts` looks at the first bytes. `count` prices without converting. `convert` turns a file
// on disk into Markdown. Converters run inside the worker pool; they receive paths, never the
// document's bytes, and they must honour `ctx.signal`.
// Failures are thrown as ApiError('invalid_document' | 'input_format_mismatch' | ...) from
// src/errors.ts; anything else thrown is reported as invalid_document.

export type { ConverterKind, ConvertOptions, Count, OutputFormat, PageRange } from '../types.js';
import type { ConverterKind, ConvertOptions, Count } from '../types.js';

/** What the registry knows of a source before converting it. */
export interface Peek {
  /** The first bytes of the file (up to 8 KiB). */
  bytes: Buffer;
  /** The client's file name, when it sent one. */
  name: string;
  /** The client's or the server's media type, when known. */
  mime?: string;
}

export interface ConvertContext {
  signal: AbortSignal;
  /** The task's own directory for scratch files, removed after the task. It is not made until a
   *  converter asks for it (scratchDir): most conversions read their file and write nothing. */
  tmpDir: string;
  /** Progress for long work: pages done out of the total. */
  progress(done: number, total: number): void;
  /** Allow URL fetches into private/loopback networks (ALLOW_PRIVATE_NETWORK=1). */
  allowPrivateNetwork: boolean;
  /** Optional OpenAI-compatible vision endpoint (AI_BASE_URL/AI_API_KEY/AI_MODEL). */
  ai?: { baseUrl: string; apiKey?: string; model: string };
  /** Tells the executor of a child process group the task started (the pid of its leader), so
   *  that a task stopped from outside (a pool thread terminated on time-out or cancel, which no
   *  signal reaches) takes the group down with it. Call the returned function once the group has
   *  ended. Absent where `signal` reaches the task (in-thread runs). */
  watchChild?(pid: number): () => void;
  /** Convert another file through the registry (the URL converter dispatches with it). */
  convertFile(path: string, peek: Peek, options: ConvertOptions): Promise<ConvertResult>;
}

export interface ConvertResult {
  /** The whole document as Markdown (for render kinds: the Markdown source to render). */
  markdown: string;
  /** Per-page Markdown, when the kind has pages (PDF, slides, TIFF frames). */
  pages?: string[];
  /** Pages actually converted. */
  pageCount: number;
  /** The priced units of what was actually converted, when the converter learnt them exactly while
   *  converting (a legacy file: its OOXML twin's count); the charge is then never above them. */
  units?: number;
  /** `ai_enhanced` when a vision model contributed. */
  variant?: 'standard' | 'ai_enhanced';
  /** The media type of what was converted (URL: the fetched document's). */
  mime?: string;
}

/** A file's last bytes as received, and its whole size. */
export interface FileEnd {
  tail: Buffer;
  bytes: number;
}

export interface Converter {
  kind: ConverterKind;
  /** Media types this converter accepts. */
  mediaTypes: readonly string[];
  /** File extensions (lower case, with the dot) this converter accepts. */
  extensions: readonly string[];
  /** True when the first bytes look like this kind (magic numbers, or plausible text). */
  accepts(peek: Peek): boolean;
  /** Counts pages/units for pricing without converting the document. */
  count(path: string, options: ConvertOptions): Promise<Count>;
  /**
   * The same count read without the converter's parser, cheaply enough for an event loop (a
   * few small reads, bounded work), or undefined when that cannot be sure: `count` (on a pool
   * thread) decides then. `end`: the file's last bytes and size, when the caller holds them.
   */
  quickCount?(path: string, options: ConvertOptions, end?: FileEnd): Promise<Count | undefined>;
  convert(path: string, options: ConvertOptions, ctx: ConvertContext): Promise<ConvertResult>;
}
