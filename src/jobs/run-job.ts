// Running one durable job (the JobRunner's handler): convert the source on the executor — small
// renders in-thread, the rest on the pool — and record its outcome guarded by the job's lease,
// retried while the database is away. The process that finishes a conversion's last source
// settles its credits in that transaction and tells the gate after.
import { readFile, stat } from 'node:fs/promises';
import { ApiError, fileProblem, isDependencyDown } from '../errors.js';
import { isRender, ENDPOINTS, type RunResult } from '../converters/registry.js';
import type { ConverterKind, ConvertOptions, Count } from '../converters/types.js';
import { priceSource } from '../billing/pricing.js';
import { settleRows, type Settlement } from '../billing/ledger.js';
import { answered, type Sql } from '../store/db.js';
import type { Pending } from '../store/blobs.js';
import { startSource, type ConversionStatus, type RolledUp } from '../store/conversions.js';
import { finishSource } from './finish.js';
import type { ConvertRequest } from '../types.js';
import { completeJob, handBack, recordedStatus, setProgress, LEASE_S, MAX_ATTEMPTS, type JobRow } from './queue.js';
import {
  INLINE_RENDER_BYTES, ROW_CONTENT_BYTES, renderableInline, type ConversionContext, type FetchedSource, type JobOutcome, type PlannedSource,
} from './context.js';
import { outputFiles, outputStage } from './outputs.js';
import { tellGate } from './settle.js';

const PROGRESS_EVERY_MS = 500;

/**
 * Runs one durable job in this process: converts its source and records the outcome, guarded
 * by the job's lease so that only the process that holds the job can finish it. The process
 * that finishes a conversion's last source settles its credits in the same transaction.
 * Resolves with what it recorded (for the request waiting to answer from it), when this run
 * recorded it.
 */
export async function runJob(ctx: ConversionContext, job: JobRow, signal: AbortSignal): Promise<JobOutcome | undefined> {
  // Each query has a deadline (see queue.ts): a query that never settles must not hold this
  // runner place for good.
  // A job this process claimed in its conversion's insert starts from what admission stored
  // (marked running there); any other is marked running as it is read: one round trip. (A
  // source found still pending below goes back to the queue marked running; its next run finds
  // it so.)
  const c = job.started ?? await answered(startSource(ctx.sql, job.conversion_id, job.source_id));
  if (!c) return undefined; // deleted under us: the job row went with it
  const kind = kindOfEndpoint(c.endpoint as string)!;
  const conv = { id: c.id as string, accountId: c.account_id as string, expiresAt: c.expires_at as Date | null };
  const guard = (tx: Sql): Promise<boolean> => completeJob(tx, ctx.runner.owner, job.id);
  const options = c.options as ConvertRequest['options'];
  // A URL fetched at admission: its blob is the document, converted as the kind it was priced
  // as, links resolved against the address it came from. (A URL admitted before fetching moved
  // to admission has none: the URL converter fetches it, as it did then.)
  const fetched: FetchedSource | undefined = c.fetched_kind
    ? { kind: c.fetched_kind as ConverterKind, url: c.fetched_from as string } : undefined;
  const source: PlannedSource = {
    id: c.source_id as string, name: c.name as string, mime: c.mime as string, bytes: 0, blob: c.blob as string,
    count: { pages: 0, units: 0 }, credits: Number(c.credits ?? 0),
  };
  // The credits are settled in the transaction that ends the conversion; the gate is told after.
  let settled: Settlement | undefined;
  const settle = c.operation === 'render' ? undefined
    : async (tx: Sql, charged: number): Promise<void> => { settled = await settleRows(tx, conv.accountId, conv.id, charged); };
  // Retried while the database is away. A retry that finds the job already done by this process
  // follows a commit whose answer was lost: the outcome is recorded, its outputs must stay (what
  // the roll-up wrote is not known then: no outcome is handed back).
  let tries = 0;
  let rolled: RolledUp | undefined;
  const record = (outcome: Parameters<typeof finishSource>[3]): Promise<ConversionStatus | null> => recording(signal, async () => {
    const retry = tries++ > 0;
    const recorded = await answered(finishSource(ctx.sql, conv, source.id, outcome, guard, settle));
    if (recorded) rolled = recorded;
    return recorded === null && retry ? recordedStatus(ctx.sql, ctx.runner.owner, job.id) : recorded?.status ?? null;
  });
  let status: ConversionStatus | null;
  let recordedOutcome: Omit<JobOutcome, 'conversion'> | undefined;
  let converting = false;
  let staged: Pending[] = [];
  // The source waits in pending/ for a moment after its commit (or, after a crash there, until
  // the pending sweep places it): try again later rather than fail the document. A job started
  // by the process that placed its source skips the look (a trip through libuv's threads).
  const blob = c.blob as string;
  if (!job.placed && !(await ctx.blobs.exists(blob)) && (await ctx.blobs.isPending(blob))) {
    await handBack(ctx.sql, ctx.runner.owner, [job.id]).catch(() => {});
    return;
  }
  try {
    if (job.attempts > MAX_ATTEMPTS) {
      throw new ApiError('invalid_document', `The conversion stopped its worker ${job.attempts - 1} times; the document is not converted.`);
    }
    // Progress is written every PROGRESS_EVERY_MS from that long after the start, and at the end
    // of a conversion that wrote some: one that ends sooner writes none (its outcome follows at
    // once), which spares most documents two commits.
    let last = Date.now();
    let written = false;
    const onProgress = (done: number, total: number): void => {
      const now = Date.now();
      if (now - last < PROGRESS_EVERY_MS && !(done >= total && written)) return;
      last = now;
      written = true;
      void setProgress(ctx.sql, ctx.runner.owner, job.id, done, total).catch(() => {});
    };
    // A job's source is always a blob: only sources rendered in their request are kept in rows.
    const file = ctx.blobs.pathOf(c.blob as string);
    const small = isRender(kind) && (await stat(file)).size <= INLINE_RENDER_BYTES && renderableInline([await readFile(file)]);
    const task = fetched
      ? { kind: fetched.kind, options: { ...options, baseUrl: fetched.url } }
      : { kind, options };
    // A pool thread writes the large outputs to pending/ itself (Task.stage).
    const stage = small ? [] : outputStage(ctx.blobs, conv.accountId, source.id, options.formats.length);
    converting = true;
    const result = await (small ? ctx.inline : ctx.executor).run(
      { ...task, path: file, name: source.name, mime: source.mime, stage: { paths: stage.map((p) => p.path), over: ROW_CONTENT_BYTES } },
      signal, onProgress,
    );
    converting = false;
    const index = Math.floor(Number(c.position) / 8);
    const out = await outputFiles(ctx, conv.accountId, source, index, result, stage);
    staged = out.staged;
    const credits = chargeFor(kind, fetched?.kind, result, options, source.credits);
    status = await record({ outputs: out.files, pages: result.pageCount, credits });
    recordedOutcome = { sourceId: source.id, source: { status: 'completed', pages: result.pageCount, credits, error: null }, outputs: out.files };
  } catch (err) {
    if (!converting && isDependencyDown(err)) {
      // The database failed, not the document: the job goes back to the queue for another try
      // (not counted as an attempt), or, while the database is still away, its lease runs out.
      // Staged outputs stay for the pending sweep: the commit may have happened.
      await handBack(ctx.sql, ctx.runner.owner, [job.id]).catch(() => {});
      return undefined;
    }
    await ctx.blobs.discard(staged);
    staged = [];
    const problem = fileProblem(err, `/v1/conversions/${conv.id}`, conv.id);
    rolled = undefined;
    status = await record({ error: problem }).catch(() => null);
    recordedOutcome = { sourceId: source.id, source: { status: 'failed', pages: null, credits: 0, error: problem }, outputs: [] };
  }
  // Recorded: the outputs go in place. Refused by the guard (another process holds the job now):
  // this run's copies go.
  if (status) await ctx.blobs.place(staged).catch((err: unknown) => ctx.billing.onError?.(err, `placing outputs of ${conv.id}`));
  else await ctx.blobs.discard(staged);
  const balance = settled ? await tellGate(ctx, conv.accountId, conv.id, settled) : undefined;
  return status && rolled && recordedOutcome ? { ...recordedOutcome, conversion: rolled, balance } : undefined;
}

/**
 * Records a job's outcome, trying again while the database is away: the conversion is done and
 * its lease holds for LEASE_S, so the outcome is kept rather than converted again after a
 * takeover. Gives up after LEASE_S (the lease is then likely gone: the guard would refuse) or
 * when the job is aborted.
 */
export async function recording<T>(signal: AbortSignal, write: () => Promise<T>, budgetMs = LEASE_S * 1000): Promise<T> {
  const until = Date.now() + budgetMs;
  for (let pause = 100; ; pause = Math.min(pause * 2, 1000)) {
    try {
      return await write();
    } catch (err) {
      if (!isDependencyDown(err) || signal.aborted || Date.now() + pause > until) throw err;
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}

/**
 * What a converted source costs: the price reserved for it, except that a PDF (sent, or fetched
 * from a URL) costs the pages the converter processed, an image understood without the vision
 * model (it did not answer: variant standard) costs what ran, OCR, and a source whose converter
 * counted what it converted (`units`: a legacy file's OOXML twin) costs that count; never more
 * than was reserved.
 */
function chargeFor(kind: ConverterKind, fetchedKind: ConverterKind | undefined, result: RunResult,
  options: ConvertOptions, reserved: number): number {
  const count: Count = { pages: result.pageCount, units: result.pageCount };
  const at = { vision: result.variant === 'ai_enhanced' };
  if (kind === 'pdf' || kind === 'image') return Math.min(reserved, priceSource(kind, count, options, at));
  if (kind === 'url' && (fetchedKind === 'pdf' || fetchedKind === 'image')) {
    return Math.min(reserved, priceSource('url', count, options, { ...at, fetched: { kind: fetchedKind, count } }));
  }
  if (result.units !== undefined) {
    const counted: Count = { pages: result.pageCount, units: result.units };
    const price = kind === 'url' && fetchedKind
      ? priceSource('url', counted, options, { ...at, fetched: { kind: fetchedKind, count: counted } })
      : priceSource(kind, counted, options, at);
    return Math.min(reserved, price);
  }
  return reserved;
}

export function kindOfEndpoint(segment: string): ConverterKind | undefined {
  for (const [kind, ep] of Object.entries(ENDPOINTS)) if (ep === segment) return kind as ConverterKind;
  return undefined;
}
