// URL → Markdown. A URL source file holds the address as UTF-8 text. fetchDocument() does the
// fetch (undici, SSRF-guarded unless allowPrivateNetwork, redirects followed by hand and each
// hop re-checked, a byte cap enforced while streaming to a file the caller names, an overall
// timeout) and says what was fetched: the type the server declared (or that the bytes show), a
// name that fits it, the final address.
// The service fetches at admission with it (jobs/plan.ts), so that a URL is priced as what it
// fetched and its job converts the fetched document as that kind, without fetching again.
// convert() below still fetches and hands the file to ctx.convertFile (with baseUrl set to the
// final address, and main_content true unless the caller said false): it serves jobs admitted
// before that change and direct use of the converter.
// count() never fetches: it is the fetch alone, one unit.
// Guard refusals are invalid_request; every remote failure is invalid_document.
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { open, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Agent, type Dispatcher, request } from 'undici';
import { ApiError } from '../errors.js';
import {
  type AddressCheck, assertPublicUrl, blockedCause, guardedDispatcher, parsePublicUrl, type Resolve,
  UnresolvableHostError,
} from '../net/ssrf.js';
import { bomOf, charsetFromContentType, decodeText } from './shared/charset.js';
import { contentTypeOf, fileNameOf } from './shared/remote-type.js';
import type { Converter, Peek } from './types.js';
import { scratchDir } from './shared/scratch-dir.js';

export const USER_AGENT = 'docpipe/0.1 (+https://docpipe.dev/bot)';
export const URL_LIMITS = { maxBytes: 20 * 1024 * 1024, timeoutMs: 30_000, maxRedirects: 5 };
const PEEK_BYTES = 8 * 1024;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface UrlConverterConfig {
  maxBytes?: number;
  timeoutMs?: number;
  maxRedirects?: number;
  /** The guard's address check (tests allow exactly one loopback server with it). */
  check?: AddressCheck;
  /** DNS resolution for the guard, before the request and at connect time. */
  resolve?: Resolve;
}

export interface FetchSettings extends UrlConverterConfig {
  /** Allow private and loopback targets (ALLOW_PRIVATE_NETWORK=1). */
  allowPrivateNetwork: boolean;
  /** Stops the fetch (a cancelled task); the timeout applies either way. */
  signal?: AbortSignal;
}

/** A fetched document, ready to be converted as its own kind. */
export interface FetchedDocument {
  /** The file it was saved to (the caller's target). */
  file: string;
  /** The address after redirects: relative links in HTML resolve against it. */
  finalUrl: URL;
  /** The media type to convert it as. */
  mime: string;
  /** A file name whose extension fits `mime`. */
  name: string;
  /** The first bytes of `file`, for the registry. */
  head: Buffer;
}

interface Fetched {
  file: string;
  finalUrl: URL;
  contentType: string | undefined;
  disposition: string | undefined;
  head: Buffer;
}

const mb = (n: number): string => `${Math.round((n / 1024 / 1024) * 10) / 10} MB`;
const header = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

export function createUrlConverter(config: UrlConverterConfig = {}): Converter {
  return {
    kind: 'url',
    mediaTypes: ['text/uri-list'],
    extensions: [],

    accepts(peek: Peek): boolean {
      return /^\s*https?:\/\/\S+\s*$/i.test(peek.bytes.toString('utf8').replace(/^\uFEFF/, ''));
    },

    async count() {
      return { pages: 1, units: 1 };
    },

    async convert(file, options, ctx) {
      const target = path.join(scratchDir(ctx), `url-${randomUUID()}`);
      const doc = await fetchDocument(await readUrl(file), target, {
        ...config, allowPrivateNetwork: ctx.allowPrivateNetwork, signal: ctx.signal,
      });
      if (ctx.signal.aborted) throw new ApiError('invalid_document', 'The conversion was cancelled.');
      const result = await ctx.convertFile(doc.file, { bytes: doc.head, name: doc.name, mime: doc.mime }, {
        ...options, baseUrl: doc.finalUrl.href, main_content: options.main_content ?? true,
      });
      return { ...result, mime: doc.mime };
    },
  };
}

/**
 * Fetches `address` into `target` (the caller owns the file, on success and on failure) and
 * says what it is: the media type to convert it as, a file name that fits it, the final
 * address after redirects. Text whose Content-Type names a charset is rewritten as UTF-8.
 */
export async function fetchDocument(address: string, target: string, settings: FetchSettings): Promise<FetchedDocument> {
  const cfg = { ...URL_LIMITS, ...settings };
  const fetched = await fetchToFile(parsePublicUrl(address), target, cfg);
  const mime = contentTypeOf(fetched.contentType, fetched.head, fetched.finalUrl, fetched.disposition);
  const name = fileNameOf(fetched.finalUrl, fetched.disposition, mime);
  const head = await toUtf8(fetched, mime);
  return { file: target, finalUrl: fetched.finalUrl, mime, name, head };
}

async function fetchToFile(start: URL, file: string, cfg: FetchSettings & typeof URL_LIMITS): Promise<Fetched> {
  const guard = { allowPrivate: cfg.allowPrivateNetwork, check: cfg.check, resolve: cfg.resolve };
  const dispatcher: Dispatcher = cfg.allowPrivateNetwork
    ? new Agent({ connect: { timeout: cfg.timeoutMs } })
    : guardedDispatcher({ check: cfg.check, resolve: cfg.resolve, connectTimeoutMs: cfg.timeoutMs });
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), cfg.timeoutMs);
  const cancel = cfg.signal ?? new AbortController().signal;
  const signal = AbortSignal.any([cancel, timeout.signal]);
  let url = start;
  try {
    for (let hop = 0; ; hop++) {
      url = await assertPublicUrl(url, guard);
      const res = await request(url, {
        dispatcher, signal, method: 'GET', maxRedirections: 0,
        headers: { 'user-agent': USER_AGENT, accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
      });
      const location = header(res.headers.location);
      if (REDIRECTS.has(res.statusCode) && location) {
        discard(res.body);
        if (hop >= cfg.maxRedirects) {
          throw new ApiError('invalid_document', `Too many redirects: ${start.href} redirected more than ${cfg.maxRedirects} times.`);
        }
        try {
          url = new URL(location, url);
        } catch {
          throw new ApiError('invalid_document', `${url.href} redirected to an invalid address: ${location.slice(0, 200)}`);
        }
        continue;
      }
      if (res.statusCode < 200 || res.statusCode >= 300) {
        discard(res.body);
        throw new ApiError('invalid_document', `${url.href} answered HTTP ${res.statusCode}; only a successful (2xx) response can be converted.`);
      }
      const length = Number(res.headers['content-length']);
      if (Number.isFinite(length) && length > cfg.maxBytes) {
        discard(res.body);
        throw tooLarge(url, cfg.maxBytes, `it declares ${mb(length)}`);
      }
      const head = await save(res.body, file, url, signal, cfg.maxBytes);
      return {
        finalUrl: url, head,
        contentType: header(res.headers['content-type']),
        disposition: header(res.headers['content-disposition']),
        file,
      };
    }
  } catch (err) {
    throw failure(err, url, cancel, timeout.signal, cfg.timeoutMs);
  } finally {
    clearTimeout(timer);
    dispatcher.destroy().catch(() => {});
  }
}

/** Streams the body to `file`, failing as soon as it passes the cap; returns the first bytes. */
async function save(body: NodeJS.ReadableStream, file: string, url: URL, signal: AbortSignal, maxBytes: number): Promise<Buffer> {
  let total = 0;
  const head: Buffer[] = [];
  let headLength = 0;
  const cap = new Transform({
    transform(chunk: Buffer, _enc, done) {
      total += chunk.length;
      if (total > maxBytes) return done(tooLarge(url, maxBytes, 'more was sent'));
      if (headLength < PEEK_BYTES) {
        head.push(chunk.subarray(0, PEEK_BYTES - headLength));
        headLength += Math.min(chunk.length, PEEK_BYTES - headLength);
      }
      done(null, chunk);
    },
  });
  await pipeline(body, cap, createWriteStream(file), { signal });
  return Buffer.concat(head);
}

export const urlConverter: Converter = createUrlConverter();

/** The address a URL source file holds (UTF-8 text, one http(s) URL). */
export async function readUrl(file: string): Promise<string> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(16 * 1024);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    const text = buf.subarray(0, bytesRead).toString('utf8').replace(/^\uFEFF/, '').trim();
    if (!text) throw new ApiError('invalid_request', 'No URL was given.');
    return text;
  } finally {
    await fh.close();
  }
}

/**
 * A text document whose Content-Type names its charset is rewritten as UTF-8 with a BOM, so the
 * header wins over a <meta charset> the way it does in browsers. Returns the new first bytes.
 */
async function toUtf8(fetched: Fetched, mime: string): Promise<Buffer> {
  const charset = charsetFromContentType(fetched.contentType);
  if (!charset || bomOf(fetched.head) || !/^text\/|\+xml$|\/xml$/.test(mime)) return fetched.head;
  const text = decodeText(await readFile(fetched.file), charset);
  await writeFile(fetched.file, `\uFEFF${text}`, 'utf8');
  return Buffer.from(`\uFEFF${text.slice(0, PEEK_BYTES)}`, 'utf8').subarray(0, PEEK_BYTES);
}

/** Drops a body we will not read; its abort error is expected and must not go unhandled. */
function discard(body: NodeJS.ReadableStream & { destroy(): void }): void {
  body.on('error', () => {});
  body.destroy();
}

function tooLarge(url: URL, max: number, why: string): ApiError {
  return new ApiError('invalid_document', `The document at ${url.href} is larger than the ${mb(max)} limit for URL conversions (${why}); the download was stopped.`);
}

function failure(err: unknown, url: URL, cancel: AbortSignal, timeout: AbortSignal, timeoutMs: number): ApiError {
  if (err instanceof UnresolvableHostError) return new ApiError('invalid_document', err.message);
  const blocked = blockedCause(err);
  if (blocked) return blocked;
  if (err instanceof ApiError) return err;
  if (cancel.aborted) return new ApiError('invalid_document', 'The conversion was cancelled.');
  if (timeout.aborted) {
    return new ApiError('invalid_document', `Fetching ${url.href} timed out after ${timeoutMs / 1000} s.`);
  }
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new ApiError('invalid_document', `The host ${url.hostname} could not be resolved (${code}).`);
  }
  const reason = code ? `${code}: ${(err as Error).message}` : (err as Error).message;
  return new ApiError('invalid_document', `Fetching ${url.href} failed (${reason}).`);
}
