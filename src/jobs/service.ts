// The conversion lifecycle: accept a request (sniff, count, price, persist), run each source
// on the executor, record outcomes, and answer inside the wait window or with 202.
import { ApiError, fileProblem } from '../errors.js';
import { sniff, peekFile, isRender, ENDPOINTS, type RunResult } from '../converters/registry.js';
import type { ConverterKind, Count } from '../converters/types.js';
import { priceSource } from '../billing/pricing.js';
import type { Sql } from '../store/db.js';
import type { Blobs } from '../store/blobs.js';
import { newId } from '../store/ids.js';
import {
  insertConversion, markSourceRunning, finishSource, getConversionRow, setAsyncReason,
  deleteConversionRows, type NewFile,
} from '../store/conversions.js';
import type { Principal } from '../server/auth.js';
import type { ConvertRequest } from '../server/convert-request.js';
import type { Executor } from './executor.js';

export type AsyncReason = 'respond_async' | 'too_many_sources' | 'pages_exceed_sync_limit' | 'capacity' | 'wait_timeout';

/** Sync limits of DESIGN.md §4. */
export const SYNC_MAX_SOURCES = 10;
export const SYNC_MAX_PDF_PAGES = 50;
/** Output contents up to this size are returned inline; all are downloadable. */
export const INLINE_CONTENT_BYTES = 1024 * 1024;
export const RETENTION_MS = 24 * 60 * 60 * 1000;

const EXT: Record<string, string> = { markdown: '.md', text: '.txt', html: '.html', pages: '.pages.json' };

export interface Accepted {
  conversionId: string;
  /** Settles when every source has reached a terminal state. */
  done: Promise<void>;
  pdfPages: number;
  sources: number;
}

interface PlannedSource {
  id: string;
  name: string;
  mime: string;
  bytes: number;
  blob: string;
  count: Count;
  credits: number;
}

export class ConversionService {
  private inflight = new Map<string, AbortController>();

  constructor(private sql: Sql, private blobs: Blobs, private executor: Executor) {}

  /** Sniffs and counts every staged source; 415 for a source that is not of the endpoint's kind. */
  async plan(req: ConvertRequest): Promise<Array<{ name: string; mime: string; bytes: number; path: string; count: Count; credits: number }>> {
    const out = [];
    for (const s of req.sources) {
      const peek = await peekFile(s.path, s.name, s.mime);
      const conv = await sniff(req.kind, peek);
      let count: Count;
      try {
        count = await conv.count(s.path, req.options);
      } catch (err) {
        if (err instanceof ApiError) throw err;
        throw new ApiError('invalid_document', `"${s.name}" could not be read: ${(err as Error).message}`);
      }
      const mime = s.mime && s.mime !== 'application/octet-stream' ? s.mime : conv.mediaTypes[0]!;
      out.push({ name: s.name, mime, bytes: s.bytes, path: s.path, count, credits: priceSource(req.kind, count, req.options) });
    }
    return out;
  }

  async accept(p: Principal, req: ConvertRequest): Promise<Accepted> {
    if (req.fileRefs.length || req.uploadRefs.length) {
      throw new ApiError('not_implemented', 'References to earlier files and uploads are not available in this build yet.');
    }
    const planned = await this.plan(req);
    const conversionId = newId('conv');
    const createdAt = new Date();
    const expiresAt = req.store ? null : new Date(createdAt.getTime() + RETENTION_MS);
    const sources: PlannedSource[] = [];
    for (const s of planned) {
      const id = newId('file');
      const blob = this.blobs.nameFor(p.accountId, id);
      await this.blobs.adopt(s.path, blob);
      sources.push({ id, name: s.name, mime: s.mime, bytes: s.bytes, blob, count: s.count, credits: s.credits });
    }
    const reserved = sources.reduce((a, s) => a + s.credits, 0);
    try {
      await insertConversion(this.sql, {
        id: conversionId, accountId: p.accountId, name: ENDPOINTS[req.kind], operation: isRender(req.kind) ? 'render' : 'parse',
        options: { ...req.options }, metadata: req.metadata, store: req.store, createdAt, expiresAt, creditsReserved: reserved,
      }, sources.map((s, i) => ({
        id: s.id, position: i * 8, role: 'source', name: s.name, mime: s.mime, status: 'queued', bytes: s.bytes,
        pages: s.count.pages, credits: s.credits, blob: s.blob,
      })));
    } catch (err) {
      await this.blobs.remove(sources.map((s) => s.blob));
      throw err;
    }
    const conv = { id: conversionId, accountId: p.accountId, expiresAt };
    const ctrl = new AbortController();
    this.inflight.set(conversionId, ctrl);
    const done = Promise.all(sources.map((s, i) => this.runSource(conv, req, s, i, ctrl.signal)))
      .then(() => undefined)
      .finally(() => this.inflight.delete(conversionId));
    const pdfPages = req.kind === 'pdf' ? sources.reduce((a, s) => a + s.count.pages, 0) : 0;
    return { conversionId, done, pdfPages, sources: sources.length };
  }

  /** Why this conversion cannot be answered synchronously, if it cannot. */
  static syncRefusal(a: Accepted): AsyncReason | undefined {
    if (a.sources > SYNC_MAX_SOURCES) return 'too_many_sources';
    if (a.pdfPages > SYNC_MAX_PDF_PAGES) return 'pages_exceed_sync_limit';
    return undefined;
  }

  /** Waits up to `seconds` for the conversion; returns the async reason when it is still going. */
  async waitFor(a: Accepted, seconds: number, reason: AsyncReason | undefined): Promise<AsyncReason | undefined> {
    let why = reason ?? ConversionService.syncRefusal(a);
    if (!why && seconds <= 0) why = 'respond_async';
    if (!why) {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        a.done.then(() => false, () => false),
        new Promise<boolean>((r) => { timer = setTimeout(() => r(true), seconds * 1000); }),
      ]);
      clearTimeout(timer);
      if (timedOut) why = 'wait_timeout';
    }
    if (why) await setAsyncReason(this.sql, a.conversionId, why);
    return why;
  }

  private async runSource(
    conv: { id: string; accountId: string; expiresAt: Date | null }, req: ConvertRequest, s: PlannedSource, index: number, signal: AbortSignal,
  ): Promise<void> {
    try {
      await markSourceRunning(this.sql, conv.id, s.id);
      const result = await this.executor.run(
        { kind: req.kind, path: this.blobs.pathOf(s.blob), name: s.name, mime: s.mime, options: req.options }, signal,
      );
      const outputs = await this.outputFiles(conv.accountId, s, index, result);
      const credits = req.kind === 'pdf' ? priceSource(req.kind, { pages: result.pageCount, units: result.pageCount }, req.options) : s.credits;
      await finishSource(this.sql, conv, s.id, { outputs, pages: result.pageCount, credits: Math.min(credits, s.credits) });
    } catch (err) {
      if (signal.aborted) return; // deleted while running: its rows are gone
      const problem = fileProblem(err, `/v1/conversions/${conv.id}`, conv.id);
      await finishSource(this.sql, conv, s.id, { error: problem }).catch(() => {});
    }
  }

  private async outputFiles(accountId: string, s: PlannedSource, index: number, result: RunResult): Promise<NewFile[]> {
    const base = s.name.replace(/\.[A-Za-z0-9]{1,8}$/, '') || 'document';
    const files: NewFile[] = [];
    for (let k = 0; k < result.outputs.length; k++) {
      const o = result.outputs[k]!;
      const id = newId('file');
      const bytes = Buffer.byteLength(o.content);
      let blob: string | null = null;
      if (bytes > INLINE_CONTENT_BYTES) blob = this.blobs.nameFor(accountId, id);
      if (blob) await this.blobs.write(blob, o.content);
      files.push({
        id, position: index * 8 + 1 + k, role: 'output', sourceId: s.id, name: base + EXT[o.format], mime: o.mime,
        status: 'completed', format: o.format, variant: result.variant, bytes, pages: result.pageCount,
        content: blob ? null : o.content, blob,
      });
    }
    return files;
  }

  async remove(accountId: string, id: string): Promise<boolean> {
    const row = await getConversionRow(this.sql, accountId, id);
    if (!row) return false;
    this.inflight.get(id)?.abort();
    const blobs = await deleteConversionRows(this.sql, accountId, id);
    if (!blobs) return false;
    await this.blobs.remove(blobs);
    return true;
  }
}

export function kindOfEndpoint(segment: string): ConverterKind | undefined {
  for (const [kind, ep] of Object.entries(ENDPOINTS)) if (ep === segment) return kind as ConverterKind;
  return undefined;
}
