// Storing an admitted conversion (the last step of admission): its sources staged as blobs in
// pending/, then one transaction with the conversion, its files, the Postgres idempotency claim,
// the month's file count, the reservation's ledger row and one durable job per source; the blobs
// are placed after the commit and this process starts the jobs it has room for. Small Markdown
// renders are rendered before the insert and stored finished, with no job at all.
//
// That transaction is the group commit's (group-commit.ts), shared with the submits committing
// at the same moment; only a conversion with a source that failed at admission (a URL that did
// not fetch, a file of the wrong type), settled in its insert, has a transaction of its own. A
// reason to answer 202 known before the insert is written with the row, and the rows as written
// are handed to the answer (Accepted.snapshot): nothing is read back after the commit.
import { readFile } from 'node:fs/promises';
import { fileProblem, isDependencyDown } from '../errors.js';
import { isRender, ENDPOINTS, type RunResult } from '../converters/registry.js';
import { recordReservation, settleRows, type Settlement } from '../billing/ledger.js';
import type { PlanLimits } from '../plans.js';
import { claimKey, countMonthlyFiles } from '../billing/admission.js';
import type { Sql } from '../store/db.js';
import type { Pending } from '../store/blobs.js';
import { newId } from '../store/ids.js';
import { insertConversion, type NewFile, type ConversionRow, type StartedSource } from '../store/conversions.js';
import { finishSourceIn } from './finish.js';
import type { Principal } from '../store/accounts.js';
import type { ConvertRequest } from '../types.js';
import { fileRowsOf, KeyTaken } from './group-commit.js';
import {
  INLINE_RENDER_BYTES, RETENTION_MS, SYNC_MAX_SOURCES, renderableInline,
  type Accepted, type AsyncReason, type ConversionContext, type Idem, type PlannedEstimate, type PlannedSource, type WaitWindow,
} from './context.js';
import { reasonUpFront } from './wait.js';
import { outputFiles } from './outputs.js';
import { tellGate } from './settle.js';
import { claimedRow, insertJobs, type NewJob } from './queue.js';

export { KeyTaken };

/** Stores a conversion admitted under `conversionId` (its reservation, if `gated`, already made) and
 *  starts its jobs; KeyTaken when another request committed the Idempotency-Key first. */
export async function persist(ctx: ConversionContext, p: Principal, req: ConvertRequest, planned: PlannedEstimate[], conversionId: string,
  credits: number, gated: boolean, idem: Idem | undefined, limits: PlanLimits, window?: WaitWindow): Promise<Accepted> {
  const createdAt = new Date();
  const expiresAt = req.store ? null : new Date(createdAt.getTime() + RETENTION_MS);
  // Small Markdown renders are pure and fast: they are rendered before the insert and stored
  // completed in the same transaction, with no job at all (one commit on the cheap path).
  const rendered = await renderNow(ctx, req, planned);
  const sources: PlannedSource[] = planned.map((s) => {
    const id = newId('file');
    // A rendered source sent inline is kept in its row like a small output (no job will read
    // it from disk); bytes Postgres text cannot hold (NUL) go to a blob as any other source.
    const held = rendered !== undefined && s.data !== undefined && !s.data.includes(0);
    return {
      id, name: s.name, mime: s.mime, bytes: s.bytes, count: s.count, credits: s.credits,
      blob: held ? null : ctx.blobs.nameFor(p.accountId, id), content: held ? s.data!.toString('utf8') : null,
      fetched: s.fetched, failure: s.failure,
    };
  });
  const conv = { id: conversionId, accountId: p.accountId, expiresAt };
  // A conversion with a failed source is settled in its insert, in a transaction of its own;
  // every other one joins the group commit.
  const grouped = !sources.some((s) => s.failure);
  // PDF pages sent, or fetched from a URL, count towards the sync limit alike.
  const pdfPages = sources.reduce((a, s) => a + (!s.failure && (s.fetched?.kind ?? req.kind) === 'pdf' ? s.count.pages : 0), 0);
  // The pool is past its high-water mark: the jobs wait in the table for a free place.
  const capacity = !rendered && !isRender(req.kind) && ctx.executor.saturated?.() === true;
  // A URL whose fetch failed at admission, or a source of the wrong type, has nothing to
  // convert: it gets no job. The others are claimed by this process's runner in their insert,
  // unless they wait for capacity (or the runner is stopping).
  const owner = capacity || !ctx.runner.claims() ? null : ctx.runner.owner;
  const jobs: NewJob[] = sources.flatMap((s) => (s.failure ? [] : [{
    id: newId('job'), conversionId, sourceId: s.id, accountId: p.accountId, owner,
  }]));
  const storedReason: AsyncReason | undefined = grouped && window
    ? reasonUpFront(window, { sources: sources.length, pdfPages, capacity }) : undefined;
  const outputs: NewFile[][] = [];
  // The blobs wait in pending/ until the rows are committed (see store/blobs.ts).
  const staged: Pending[] = [];
  let snapshot: Accepted['snapshot'];
  // A conversion whose every URL failed to fetch ends in its insert, settled in it.
  let settled: Settlement | undefined;
  const settle = gated
    ? async (tx: Sql, charged: number): Promise<void> => { settled = await settleRows(tx, p.accountId, conversionId, charged); }
    : undefined;
  try {
    for (let i = 0; i < sources.length; i++) {
      const s = planned[i]!;
      const blob = sources[i]!.blob;
      if (blob) staged.push(await (s.data ? ctx.blobs.stageContent(blob, s.data) : ctx.blobs.stage(s.path, blob)));
    }
    if (rendered) {
      for (let i = 0; i < sources.length; i++) {
        const out = await outputFiles(ctx, p.accountId, sources[i]!, i, rendered[i]!);
        outputs.push(out.files);
        staged.push(...out.staged);
      }
    }
    if (grouped) {
      const item = rendered
        ? finishedRender(p.accountId, conversionId, req, createdAt, expiresAt, sources, rendered, outputs, storedReason)
        : queuedConversion(p.accountId, conversionId, req, createdAt, expiresAt, sources, gated ? credits : 0, storedReason, owner !== null);
      await ctx.group.add({
        ...item, monthlyFiles: sources.length, monthlyLimit: limits.filesPerMonth,
        claim: idem && { endpoint: idem.endpoint, key: idem.key, fingerprint: idem.fingerprint },
        reserved: gated ? credits : undefined,
        jobs: rendered ? undefined : jobs,
      });
      snapshot = { row: item.row, files: fileRowsOf(item.row, item.files) };
    } else await ctx.sql.begin(async (tx) => {
      const t = tx as unknown as Sql;
      if (idem && !await claimKey(t, { accountId: p.accountId, ...idem, conversionId })) throw new KeyTaken();
      // insertConversion opens its own transaction; inside this one it simply joins it.
      const joined = Object.assign(Object.create(null), { begin: (fn: (s: Sql) => unknown) => fn(t) }) as Sql;
      await insertConversion(joined, {
        id: conversionId, accountId: p.accountId, name: conversionName(req, sources), endpoint: ENDPOINTS[req.kind], operation: isRender(req.kind) ? 'render' : 'parse',
        options: { ...req.options }, metadata: req.metadata, store: req.store, createdAt, expiresAt, creditsReserved: gated ? credits : 0,
      }, sources.map((s, i) => ({
        id: s.id, position: i * 8, role: 'source', name: s.name, mime: s.mime, status: 'queued', bytes: s.bytes,
        pages: s.failure ? null : s.count.pages, credits: s.credits, blob: s.blob, content: s.content, fetched: s.fetched,
      })));
      await countMonthlyFiles(t, p.accountId, sources.length, limits.filesPerMonth);
      if (gated) await recordReservation(t, p.accountId, conversionId, credits);
      for (const s of sources) {
        if (s.failure) await finishSourceIn(t, conv, s.id, { error: fileProblem(s.failure, `/v1/conversions/${conversionId}`, conversionId) }, settle);
      }
      // One durable job per source, committed with the conversion: if this process dies now,
      // another one finds the jobs and runs them.
      if (jobs.length > 0) await insertJobs(t, jobs);
    });
  } catch (err) {
    // Refused or rolled back: the blobs go. A lost connection may have lost only the commit's
    // answer: the pending sweep keeps or removes them by the rows.
    if (!isDependencyDown(err)) await ctx.blobs.discard(staged);
    throw err;
  }
  await ctx.blobs.place(staged);
  if (rendered) return { conversionId, done: Promise.resolve(), pdfPages, sources: sources.length, capacity: false, finished: true, snapshot, storedReason };
  if (jobs.length === 0) {
    // Every URL failed to fetch: the conversion ended failed (and settled) in its insert.
    if (settled) await tellGate(ctx, p.accountId, conversionId, settled);
    return { conversionId, done: Promise.resolve(), pdfPages: 0, sources: sources.length, capacity: false, finished: true };
  }
  // A job claimed in the group commit's insert starts from what was stored there, marked running
  // (queuedConversion): the runner reads nothing back. A grouped conversion has no failed source,
  // so its jobs are its sources, in order. (A conversion settled in its own transaction stores its
  // sources queued: its jobs mark them as they start.)
  const startedOf = (i: number): StartedSource | undefined => {
    if (!grouped) return undefined;
    const s = sources[i]!;
    return {
      source_id: s.id, name: s.name, mime: s.mime, blob: s.blob, position: i * 8, credits: s.credits,
      fetched_from: s.fetched?.url ?? null, fetched_kind: s.fetched?.kind ?? null,
      id: conversionId, account_id: p.accountId, endpoint: ENDPOINTS[req.kind], options: { ...req.options },
      operation: isRender(req.kind) ? 'render' : 'parse', expires_at: expiresAt,
    };
  };
  const started = owner ? await ctx.runner.runClaimed(jobs.map((j, i) => claimedRow(j, startedOf(i)))) : [];
  const outcomes = Promise.all(started);
  const done = outcomes.then(() => undefined);
  return { conversionId, done, outcomes, jobs: jobs.length, pdfPages, sources: sources.length, capacity, snapshot, storedReason };
}

/** A render in the request is not cancelled (it takes well under a millisecond): one signal for
 *  all of them. A controller made per request cost 3.9 µs, about 1 % of a cheap request's CPU. */
const NEVER_ABORTED = new AbortController().signal;

/** Renders small Markdown sources in this thread; undefined when the request is not that. */
async function renderNow(ctx: Pick<ConversionContext, 'inline'>, req: ConvertRequest, planned: PlannedEstimate[]): Promise<RunResult[] | undefined> {
  // A source of the wrong type is a failed file, recorded with the jobs of the others.
  if (!isRender(req.kind) || planned.length > SYNC_MAX_SOURCES || planned.some((s) => s.failure)) return undefined;
  if (planned.reduce((n, s) => n + s.bytes, 0) > INLINE_RENDER_BYTES) return undefined;
  try {
    // Within the byte budget the sources are small: reading an uploaded one to count its markers is cheap.
    const bytes = await Promise.all(planned.map((s) => s.data ?? readFile(s.path)));
    if (!renderableInline(bytes)) return undefined;
    return await Promise.all(planned.map((s) => ctx.inline.run(
      { kind: req.kind, path: s.path, data: s.data, name: s.name, mime: s.mime, options: req.options, peek: s.peek }, NEVER_ABORTED)));
  } catch {
    return undefined; // rendered as jobs instead, where a failure is recorded per file
  }
}

/** The rows of a render conversion whose every source was rendered in the request. */
function finishedRender(accountId: string, id: string, req: ConvertRequest, createdAt: Date, expiresAt: Date | null,
  sources: PlannedSource[], rendered: RunResult[], outputs: NewFile[][], asyncReason: AsyncReason | undefined): { row: ConversionRow; files: NewFile[] } {
  const row: ConversionRow = {
    id, account_id: accountId, name: conversionName(req, sources), endpoint: ENDPOINTS[req.kind], operation: 'render', status: 'completed',
    async_reason: asyncReason ?? null,
    options: { ...req.options }, metadata: req.metadata ?? null, store: req.store, credits_reserved: 0, credits_charged: 0,
    created_at: createdAt, completed_at: new Date(), expires_at: expiresAt,
  };
  const files: NewFile[] = sources.flatMap((s, i) => [{
    id: s.id, position: i * 8, role: 'source' as const, name: s.name, mime: s.mime, status: 'completed' as const,
    bytes: s.bytes, pages: rendered[i]!.pageCount, credits: 0, blob: s.blob, content: s.content,
  }, ...outputs[i]!]);
  return { row, files };
}

/** The rows of a conversion stored waiting for its jobs, one per source: running when this
 *  process's runner claimed them in the insert and starts them right after the commit (what
 *  marking them as each job starts cost every document a transaction of its own), else queued. */
function queuedConversion(accountId: string, id: string, req: ConvertRequest, createdAt: Date, expiresAt: Date | null,
  sources: PlannedSource[], reserved: number, asyncReason: AsyncReason | undefined, claimed: boolean): { row: ConversionRow; files: NewFile[] } {
  const status = claimed ? 'running' as const : 'queued' as const;
  const row: ConversionRow = {
    id, account_id: accountId, name: conversionName(req, sources), endpoint: ENDPOINTS[req.kind],
    operation: isRender(req.kind) ? 'render' : 'parse', status, async_reason: asyncReason ?? null,
    options: { ...req.options }, metadata: req.metadata ?? null, store: req.store, credits_reserved: reserved, credits_charged: 0,
    created_at: createdAt, completed_at: null, expires_at: expiresAt,
  };
  const files: NewFile[] = sources.map((s, i) => ({
    id: s.id, position: i * 8, role: 'source' as const, name: s.name, mime: s.mime, status, bytes: s.bytes,
    pages: s.count.pages, credits: s.credits, blob: s.blob, content: s.content, fetched: s.fetched,
  }));
  return { row, files };
}

/** The client's name for the conversion, else its first source's ("report.pdf and 2 more"). */
export function conversionName(req: { kind: ConvertRequest['kind']; name?: string }, sources: ReadonlyArray<{ name: string }>): string {
  if (req.name) return req.name;
  const first = sources[0]?.name;
  if (!first) return ENDPOINTS[req.kind];
  return sources.length === 1 ? first : `${first} and ${sources.length - 1} more`;
}
