// Request bodies. JSON is collected up to a cap and parsed with a nesting limit; multipart is
// streamed through busboy straight into files under DATA_DIR/tmp, pausing the socket while the
// disk catches up. Nothing is buffered past its cap: an oversized body is refused from its
// Content-Length, or the moment its running total passes the cap.
import { createWriteStream, existsSync, mkdirSync } from 'node:fs';
import { removeFile } from '../store/blobs.js';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import busboy from 'busboy';
import { ApiError } from '../errors.js';
import { PEEK_BYTES } from '../converters/registry.js';
import type { BodyReader } from './body-reader.js';
import { onCleanup, type Ctx } from './respond.js';

function bodyOf(ctx: Ctx): BodyReader {
  if (!ctx.body) throw new ApiError('invalid_request', `${ctx.method} requests carry no body.`);
  return ctx.body;
}

const EMPTY = Buffer.alloc(0);

export interface UploadedFile {
  field: string;
  name: string;
  mime: string;
  path: string;
  bytes: number;
  /** The first bytes of the file (up to PEEK_BYTES), kept as they went by. */
  head: Buffer;
  /** Its last bytes (up to TAIL_BYTES), kept likewise: where a PDF's count is read. */
  tail: Buffer;
}

/** The end of each uploaded file kept in memory (UploadedFile.tail). */
export const TAIL_BYTES = 64 * 1024;

export interface MultipartBody {
  files: UploadedFile[];
  fields: Record<string, string>;
}

function declaredLength(ctx: Ctx): number | undefined {
  const raw = ctx.headers['content-length'];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  return Number.isFinite(n) ? n : undefined;
}

function tooLarge(limit: number): ApiError {
  return new ApiError('payload_too_large', `The request body is over the ${limit} byte limit.`);
}

/** Collects a small body in memory, refusing past `limit` bytes. */
export function readRaw(ctx: Ctx, limit: number): Promise<Buffer> {
  const declared = declaredLength(ctx);
  if (declared !== undefined && declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let failed = false;
    const body = bodyOf(ctx);
    onCleanup(ctx, () => { if (!failed) { failed = true; reject(new ApiError('invalid_request', 'The client went away.')); } });
    body.consume((chunk, isLast) => {
      if (failed) return;
      total += chunk.byteLength;
      if (total > limit) {
        failed = true;
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
      if (isLast) { failed = true; resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total)); }
    });
  });
}

const MAX_DEPTH = 32;
/** Values (commas outside strings) a JSON body may hold: far above any real request (10,000
 *  upload parts), far below a flood of tiny values that costs more to parse and store than its bytes. */
const MAX_VALUES = 100_000;

/** Parses JSON, refusing deep nesting and floods of values before JSON.parse sees them. */
export function parseJson(buf: Buffer): unknown {
  let depth = 0;
  let values = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_DEPTH) throw new ApiError('invalid_request', `JSON nesting deeper than ${MAX_DEPTH} levels.`);
    } else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c && ++values > MAX_VALUES) throw new ApiError('invalid_request', `JSON with more than ${MAX_VALUES} values.`);
  }
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch (e) {
    throw new ApiError('invalid_request', `The body is not valid JSON: ${(e as Error).message}`);
  }
}

export async function readJson(ctx: Ctx, limit: number): Promise<unknown> {
  const buf = await readRaw(ctx, limit);
  if (buf.length === 0) return {};
  return parseJson(buf);
}

export interface MultipartLimits {
  maxBytes: number;
  maxFiles: number;
  maxFields: number;
  maxFieldBytes: number;
}

/**
 * Streams a multipart body to files in `dir`. Every file written is registered for removal
 * when the request ends; callers keep a file by moving it elsewhere first.
 */
export function readMultipart(ctx: Ctx, dir: string, limits: MultipartLimits): Promise<MultipartBody> {
  const declared = declaredLength(ctx);
  if (declared !== undefined && declared > limits.maxBytes) return Promise.reject(tooLarge(limits.maxBytes));
  mkdirSync(dir, { recursive: true });

  return new Promise((resolve, reject) => {
    const files: UploadedFile[] = [];
    const fields: Record<string, string> = {};
    let settled = false;
    let total = 0;
    let pendingWrites = 0;
    let ended = false;
    const tempPaths: string[] = [];
    const writers: Array<{ destroy(): void }> = [];
    // A file the conversion kept was moved away (Blobs.stage): looking costs the event loop a
    // lookup in the kernel's cache, removing one that is gone a trip through libuv's threads.
    onCleanup(ctx, () => Promise.all(tempPaths.filter((p) => existsSync(p)).map(removeFile)));

    const fail = (err: unknown): void => {
      if (settled) return;
      settled = true;
      bb?.destroy();
      for (const w of writers) w.destroy();
      reject(err);
    };
    const maybeDone = (): void => {
      if (!settled && ended && pendingWrites === 0) { settled = true; resolve({ files, fields }); }
    };
    // Every request ends with its clean-up; the error (and its stack) is made only when it is used.
    onCleanup(ctx, () => { if (!settled) fail(new ApiError('invalid_request', 'The client went away.')); });

    let bb: busboy.Busboy | undefined;
    try {
      bb = busboy({
        headers: { 'content-type': ctx.headers['content-type'] ?? '' },
        // file names arrive as UTF-8 (RFC 7578; browsers, curl and fetch send them so), not Latin-1
        defParamCharset: 'utf8',
        limits: { fileSize: limits.maxBytes, files: limits.maxFiles, fields: limits.maxFields, fieldSize: limits.maxFieldBytes, parts: limits.maxFiles + limits.maxFields },
      });
    } catch (e) {
      reject(new ApiError('invalid_request', `Bad multipart body: ${(e as Error).message}`));
      return;
    }

    const parser = bb;
    parser.on('file', (field, stream, info) => {
      const target = path.join(dir, `up_${randomBytes(12).toString('hex')}`);
      tempPaths.push(target);
      const file: UploadedFile = { field, name: safeName(info.filename), mime: info.mimeType, path: target, bytes: 0, head: EMPTY, tail: EMPTY };
      // The chunks that make up the last TAIL_BYTES, joined once the file ends (chunks are this
      // request's own buffers, held by the write stream anyway until written).
      const recent: Buffer[] = [];
      let recentBytes = 0;
      files.push(file);
      pendingWrites++;
      const out = createWriteStream(target);
      writers.push(out);
      stream.on('data', (d: Buffer) => {
        if (file.head.length < PEEK_BYTES) file.head = Buffer.concat([file.head, d.subarray(0, PEEK_BYTES - file.head.length)]);
        file.bytes += d.length;
        recent.push(d);
        recentBytes += d.length;
        while (recentBytes - recent[0]!.length >= TAIL_BYTES) recentBytes -= recent.shift()!.length;
      });
      stream.on('end', () => {
        const joined = recent.length === 1 ? recent[0]! : Buffer.concat(recent);
        file.tail = joined.subarray(Math.max(0, joined.length - TAIL_BYTES));
        recent.length = 0;
      });
      stream.on('limit', () => fail(tooLarge(limits.maxBytes)));
      // Destroying the parser (client gone, limit hit) errors its file streams: already handled.
      stream.on('error', (e) => fail(new ApiError('invalid_request', `Bad multipart body: ${e.message}`)));
      out.on('error', (e) => fail(e));
      out.on('finish', () => { pendingWrites--; maybeDone(); });
      stream.pipe(out);
    });
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) return fail(new ApiError('invalid_request', `Field "${name}" is over ${limits.maxFieldBytes} bytes.`));
      fields[name] = value;
    });
    parser.on('filesLimit', () => fail(new ApiError('invalid_request', `At most ${limits.maxFiles} files per request.`)));
    parser.on('fieldsLimit', () => fail(new ApiError('invalid_request', `At most ${limits.maxFields} fields per request.`)));
    parser.on('partsLimit', () => fail(new ApiError('invalid_request', 'Too many parts in the multipart body.')));
    parser.on('error', (e) => fail(new ApiError('invalid_request', `Bad multipart body: ${(e as Error).message}`)));
    parser.on('close', () => { ended = true; maybeDone(); });

    const body = bodyOf(ctx);
    // One listener for the request: the chunks held before consume() are written one after
    // another, and each may find the parser full (resume() is a no-op unless paused).
    parser.on('drain', () => { if (!settled) body.resume(); });
    body.consume((chunk, isLast) => {
      if (settled) return;
      total += chunk.byteLength;
      if (total > limits.maxBytes) return fail(tooLarge(limits.maxBytes));
      const ok = parser.write(chunk);
      if (isLast) { parser.end(); return; }
      // The disk (through busboy's file streams) is behind: stop reading the socket.
      if (!ok) body.pause();
    });
  });
}

/** A file name safe to show and to use as a download name: no directories, no controls. */
export function safeName(name: string | undefined): string {
  const base = (name ?? '').split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  // control characters, quotes, and the bidi controls that make a name read as another
  // ("invoice\u202Efdp.exe")
  const clean = base.replace(/[\u0000-\u001f\u007f"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '').trim().slice(0, 255);
  return clean || 'document';
}
