// Planning a request's sources (ConversionService.plan, for estimate and submit alike): sniff,
// count and price each one. A URL source is fetched here, at admission, and priced as the fetch
// plus what it fetched, as its kind, so the estimate is exact and submit reserves exactly that;
// a fetch that fails is kept as that source's failure (it costs nothing). So is a source that is
// not of the endpoint's kind, beside others that are: one wrong file fails only itself. A request
// none of whose sources is of the endpoint's kind (a single source, say) is refused with 415.
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { ApiError } from '../errors.js';
import { sniff, peekBytes, peekFile, converterForMime } from '../converters/registry.js';
import { renderCount } from '../converters/markdown.js';
import type { Converter, ConvertOptions, Count, FileEnd } from '../converters/types.js';
import { fetchDocument, readUrl } from '../converters/url.js';
import { countTask } from './executor.js';
import { priceSource } from '../billing/pricing.js';
import type { ConvertRequest, StagedSource } from '../types.js';
import type { ConversionContext, PlannedEstimate, Track } from './context.js';

/** What planning reads of the service. */
type Planning = Pick<ConversionContext, 'blobs' | 'urlFetch' | 'executor'>;

/** URL sources of one request fetched at once, at admission. */
const URL_FETCHES_AT_ONCE = 4;

/**
 * Sniffs, counts and prices every staged source. A source that is not of the endpoint's kind
 * is kept as that source's `failure` (415 input_format_mismatch, priced 0), unless no source of
 * the request is of that kind: then the request is refused with the first one's 415. A URL
 * source is fetched here into a file handed to `track`, and priced as the fetch plus what it
 * fetched; a fetch that fails is kept as the source's `failure`.
 */
export async function planSources(ctx: Planning, req: ConvertRequest, track: Track): Promise<PlannedEstimate[]> {
  if (req.kind === 'url') {
    // Every source is looked at before anything is fetched.
    const fits = await Promise.all(req.sources.map(async (s) => mismatchOf(async () => sniff(req.kind, await peekFile(s.path, s.name, s.mime)))));
    refuseWhenNoneFits(fits);
    return inOrder(req.sources, URL_FETCHES_AT_ONCE, (s, i) => {
      const mismatch = fits[i];
      return mismatch ? Promise.resolve(failed(s, mismatch)) : planFetch(ctx, s, req.options, track);
    });
  }
  const out: PlannedEstimate[] = [];
  for (const s of req.sources) {
    const held = s.data ?? s.head;
    const peek = held ? peekBytes(held, s.name, s.mime) : await peekFile(s.path, s.name, s.mime);
    let conv: Converter | undefined;
    let count: Count | undefined;
    // A converter's count may find the mismatch too (a workbook renamed .docx).
    const mismatch = await mismatchOf(async () => {
      conv = await sniff(req.kind, peek);
      count = s.data ? renderCount(s.data.length) : await countOf(ctx, conv, s.path, s.name, req.options, s.tail && { tail: s.tail, bytes: s.bytes });
    });
    if (mismatch) {
      out.push({ ...failed(s, mismatch), peek, data: s.data });
      continue;
    }
    const mime = s.mime && s.mime !== 'application/octet-stream' ? s.mime : conv!.mediaTypes[0]!;
    out.push({
      name: s.name, peek, mime, bytes: s.bytes, path: s.path, data: s.data, count: count!,
      credits: priceSource(req.kind, count!, req.options, { vision: ctx.executor.vision === true }),
    });
  }
  refuseWhenNoneFits(out.map((s) => (s.failure?.code === 'input_format_mismatch' ? s.failure : undefined)));
  return out;
}

/** The 415 that `step` throws, if it throws one (any other failure goes on up). */
async function mismatchOf(step: () => Promise<unknown>): Promise<ApiError | undefined> {
  try {
    await step();
    return undefined;
  } catch (err) {
    if (err instanceof ApiError && err.code === 'input_format_mismatch') return err;
    throw err;
  }
}

/** A request none of whose sources is of the endpoint's kind is refused as a whole. */
function refuseWhenNoneFits(mismatches: Array<ApiError | undefined>): void {
  if (mismatches.length > 0 && mismatches.every((m) => m !== undefined)) throw mismatches[0]!;
}

/** A source kept as a failed file: it costs nothing and is not converted. */
function failed(s: StagedSource, failure: ApiError): PlannedEstimate {
  const mime = s.mime && s.mime !== 'application/octet-stream' ? s.mime : 'application/octet-stream';
  return { name: s.name, mime, bytes: s.bytes, path: s.path, count: { pages: 0, units: 0 }, credits: 0, failure };
}

/** Fetches one URL source next to the staged files and prices what came back, as its kind. */
async function planFetch(ctx: Planning, s: StagedSource, options: ConvertOptions, track: Track): Promise<PlannedEstimate> {
  const target = path.join(ctx.blobs.tmpDir, `fetch_${randomBytes(12).toString('hex')}`);
  try {
    const doc = await fetchDocument(await readUrl(s.path), target, ctx.urlFetch);
    // The dispatch the URL converter makes: the declared (or sniffed) type, then the bytes.
    const conv = await converterForMime({ bytes: doc.head, name: doc.name, mime: doc.mime });
    const count = await countOf(ctx, conv, doc.file, doc.name, options);
    return {
      name: s.name, mime: doc.mime, bytes: (await stat(doc.file)).size, path: doc.file, count,
      credits: priceSource('url', count, options, { vision: ctx.executor.vision === true, fetched: { kind: conv.kind, count } }),
      fetched: { url: doc.finalUrl.href, kind: conv.kind },
    };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    // The source stays the address it was; nothing was fetched to charge for.
    const mime = s.mime && s.mime !== 'application/octet-stream' ? s.mime : 'text/uri-list';
    return { name: s.name, mime, bytes: s.bytes, path: s.path, count: { pages: 0, units: 0 }, credits: 0, failure: err };
  } finally {
    track(target);
  }
}

/**
 * A converter's count, made by the executor (a pool thread in the server: the parser never runs
 * on the event loop); a failure that is not already an ApiError is the document's fault (422).
 */
async function countOf(ctx: Planning, conv: Converter, file: string, name: string, options: ConvertOptions, end?: FileEnd): Promise<Count> {
  try {
    // Read without the parser when the converter can (a PDF's cross-reference data): no trip to
    // the pool, whose threads are converting.
    const quick = await conv.quickCount?.(file, options, end);
    if (quick) return quick;
    const task = { kind: conv.kind, path: file, name, options };
    return await (ctx.executor.count ? ctx.executor.count(task) : countTask(task));
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError('invalid_document', `"${name}" could not be read: ${(err as Error).message}`);
  }
}

/** `fn` over `items`, at most `limit` at a time; the results in the items' order. */
async function inOrder<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}
