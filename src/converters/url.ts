// URL → Markdown. The source file holds the address as UTF-8 text. convert() fetches it (undici,
// SSRF-guarded unless ctx.allowPrivateNetwork, redirects followed by hand and each hop
// re-checked, a byte cap enforced while streaming to ctx.tmpDir, an overall timeout), then
// hands the fetched file to ctx.convertFile under the type the server declared (or that the
// bytes show), with baseUrl set to the final address. count() never fetches: the fetch is one
// unit; billing adds the price of what was fetched.
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
import type { Converter, ConvertContext, Peek } from './types.js';

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
  const cfg = { ...URL_LIMITS, ...config };

  async function fetchToFile(start: URL, ctx: ConvertContext): Promise<Fetched> {
    const guard = { allowPrivate: ctx.allowPrivateNetwork, check: cfg.check, resolve: cfg.resolve };
    const dispatcher: Dispatcher = ctx.allowPrivateNetwork
      ? new Agent({ connect: { timeout: cfg.timeoutMs } })
      : guardedDispatcher({ check: cfg.check, resolve: cfg.resolve, connectTimeoutMs: cfg.timeoutMs });
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), cfg.timeoutMs);
    const signal = AbortSignal.any([ctx.signal, timeout.signal]);
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
        const file = path.join(ctx.tmpDir, `url-${randomUUID()}`);
        const head = await save(res.body, file, url, signal);
        return {
          file, finalUrl: url, head,
          contentType: header(res.headers['content-type']),
          disposition: header(res.headers['content-disposition']),
        };
      }
    } catch (err) {
      throw failure(err, url, ctx.signal, timeout.signal, cfg.timeoutMs);
    } finally {
      clearTimeout(timer);
      dispatcher.destroy().catch(() => {});
    }
  }

  /** Streams the body to `file`, failing as soon as it passes the cap; returns the first bytes. */
  async function save(body: NodeJS.ReadableStream, file: string, url: URL, signal: AbortSignal): Promise<Buffer> {
    let total = 0;
    const head: Buffer[] = [];
    let headLength = 0;
    const cap = new Transform({
      transform(chunk: Buffer, _enc, done) {
        total += chunk.length;
        if (total > cfg.maxBytes) return done(tooLarge(url, cfg.maxBytes, 'more was sent'));
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
      const start = parsePublicUrl(await readUrl(file));
      const fetched = await fetchToFile(start, ctx);
      const mime = contentTypeOf(fetched.contentType, fetched.head, fetched.finalUrl, fetched.disposition);
      const name = fileNameOf(fetched.finalUrl, fetched.disposition, mime);
      const head = await toUtf8(fetched, mime);
      if (ctx.signal.aborted) throw new ApiError('invalid_document', 'The conversion was cancelled.');
      const result = await ctx.convertFile(fetched.file, { bytes: head, name, mime }, { ...options, baseUrl: fetched.finalUrl.href });
      return { ...result, mime };
    },
  };
}

export const urlConverter: Converter = createUrlConverter();

async function readUrl(file: string): Promise<string> {
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
