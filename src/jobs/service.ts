// The conversion lifecycle: admit a request (sniff, count, price, plan limits, idempotency,
// reserve credits), persist it, run each source on the executor, record outcomes, settle the
// credits, and answer inside the wait window or with 202.
//
// Billing decisions kept here:
// - Markdown → HTML / text (render kinds) cost 0 and skip the gate entirely: no reservation, no
//   concurrency slot, no ledger rows. The cheap path stays one database transaction; it is still
//   rate limited (in the routes) and still checked against the plan's file limits.
// - Every other submit makes ONE gate.reserve (credits + concurrency slot + the Redis idempotency
//   claim). The reserve row goes into the ledger in the transaction that inserts the conversion;
//   if that transaction fails, the gate reservation is released.
// - Idempotency is also claimed in Postgres in that transaction (idempotency_keys), so that a
//   lost Redis cannot create a second conversion: a conflict there is answered as a replay.
// - A finished conversion is charged the credits of its completed sources (failed ones cost
//   nothing); a conversion deleted before it settled is charged nothing.
import { stat } from 'node:fs/promises';
import { ApiError, fileProblem, isDependencyDown } from '../errors.js';
import { sniff, peekFile, isRender, ENDPOINTS, type RunResult } from '../converters/registry.js';
import type { ConverterKind, Count } from '../converters/types.js';
import { priceSource, type Fetched } from '../billing/pricing.js';
import { Refusal, refusalError, reserveWithRebuild, type Gate, type IdempotencyClaim } from '../billing/gate.js';
import { recordReservation, settleRows, type Ledger, type Settlement } from '../billing/ledger.js';
import { GateAudit } from '../billing/audit.js';
import type { Plan, PlanLimits } from '../billing/plans.js';
import {
  awaitClaim, checkFileSizes, checkPlanLimits, claimKey, countMonthlyFiles, findClaim, requestFingerprint,
  IDEMPOTENCY_TTL_S,
} from '../billing/admission.js';
import type { Sql } from '../store/db.js';
import type { Blobs, Pending } from '../store/blobs.js';
import { newId } from '../store/ids.js';
import {
  insertConversion, markSourceRunning, finishSource, getConversionRow, setAsyncReason,
  deleteConversionRows, type NewFile, type ConversionStatus,
} from '../store/conversions.js';
import type { Principal } from '../server/auth.js';
import type { ConvertRequest } from '../server/convert-request.js';
import type { Executor } from './executor.js';
import { JobRunner } from './runner.js';
import { resolveSources } from '../uploads/refs.js';
import { completeJob, handBack, setProgress, LEASE_S, MAX_ATTEMPTS, type JobRow } from './queue.js';

export type AsyncReason = 'respond_async' | 'too_many_sources' | 'pages_exceed_sync_limit' | 'capacity' | 'wait_timeout';

/** Sync limits of DESIGN.md §4. */
export const SYNC_MAX_SOURCES = 10;
export const SYNC_MAX_PDF_PAGES = 50;
/** Output contents up to this size are returned inline; all are downloadable. */
export const INLINE_CONTENT_BYTES = 1024 * 1024;
export const RETENTION_MS = 24 * 60 * 60 * 1000;

const EXT: Record<string, string> = { markdown: '.md', text: '.txt', html: '.html', pages: '.pages.json' };

/** What a URL fetches is unknown until it is fetched, and the executor does not report it: a URL
 *  is estimated, reserved and charged as the fetch plus the minimum price of a document. */
const URL_ASSUMED_FETCH: Fetched = { kind: 'text', count: { pages: 1, units: 0 } };

/** How long a replay waits for the first request with its key to commit its conversion. */
const REPLAY_WAIT_MS = 5_000;

export interface Accepted {
  conversionId: string;
  /** Settles when the jobs this process started have ended (other processes may run the rest). */
  done: Promise<void>;
  pdfPages: number;
  sources: number;
  /** The pool was past its high-water mark: the jobs wait in the table for a free place. */
  capacity: boolean;
  /** Already terminal when accepted (rendered in the request). */
  finished?: boolean;
}

export interface LifecycleOptions {
  /** The executor for small render jobs (Markdown → HTML/text): in-thread, never queued. */
  inline: Executor;
  /** Jobs this process runs at once. */
  capacity: number;
  pollMs?: number;
}

const TERMINAL: ReadonlySet<string> = new Set(['completed', 'completed_with_errors', 'failed']);
/** Render sources up to this size run in-thread; larger ones go to the pool like documents. */
export const INLINE_RENDER_BYTES = 256 * 1024;
const PROGRESS_EVERY_MS = 500;

/** A submit either created a conversion or named the one its Idempotency-Key created. */
export type Submitted =
  | { kind: 'accepted'; accepted: Accepted }
  | { kind: 'replay'; conversionId: string };

/** Where the request came from, for the idempotency fingerprint. */
export interface SubmitContext {
  method: string;
  path: string;
  idempotencyKey?: string;
}

export interface Billing {
  gate: Gate;
  ledger: Ledger;
  limits(plan: Plan): PlanLimits;
  /** Failures that no request can be told about (a settle after the response). */
  onError?(err: unknown, what: string): void;
  /** The sweeps mended what a fault had left (a settle lost, the gate out of line with the ledger). */
  onMend?(what: string, counts: Record<string, number>): void;
}

export interface PlannedEstimate {
  name: string;
  mime: string;
  bytes: number;
  path: string;
  count: Count;
  credits: number;
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

interface Idem {
  endpoint: string;
  key: string;
  fingerprint: string;
}

/** Thrown inside the insert transaction to roll it back when another request holds the key. */
class KeyTaken extends Error {}

export class ConversionService {
  readonly runner: JobRunner;
  /** Mends the gate's copy of active accounts from the ledger (a settle it was not told, …). */
  readonly audit: GateAudit;
  private inline: Executor;
  private settleTimer?: NodeJS.Timeout;

  constructor(private sql: Sql, private blobs: Blobs, private executor: Executor, private billing: Billing, life: LifecycleOptions) {
    this.inline = life.inline;
    this.audit = new GateAudit(sql, billing.gate);
    this.runner = new JobRunner(sql, (job, signal) => this.runJob(job, signal), { capacity: life.capacity, pollMs: life.pollMs });
  }

  /** Starts taking queued and abandoned jobs, settling conversions whose settle was lost, and
   *  auditing the gate's copy of the accounts active here against the ledger. */
  start(): void {
    this.runner.start();
    this.settleTimer = setInterval(() => void this.sweep().catch((err: unknown) => this.billing.onError?.(err, 'settle sweep')), 10_000);
    this.settleTimer.unref();
  }

  /** Settles what lost its settle, then audits the gate; says what it mended. */
  private async sweep(): Promise<void> {
    const settled = await this.settleLost();
    if (settled > 0) this.billing.onMend?.('settled conversions whose settle was lost', { conversions: settled });
    const a = await this.audit.run();
    if (a.settled + a.released + a.adopted > 0) this.billing.onMend?.('gate reservations brought in line with the ledger', { ...a });
    const b = await this.resolvePending();
    if (b.placed + b.removed > 0) this.billing.onMend?.('blobs left pending by a crash resolved by their rows', { ...b });
  }

  /** Stops taking work; running jobs get `graceMs` to finish, the rest are handed back. */
  async stop(graceMs: number): Promise<void> {
    clearInterval(this.settleTimer);
    await this.runner.stop(graceMs);
  }

  /** Sniffs, counts and prices every staged source; 415 for a source that is not of the endpoint's kind. */
  async plan(req: ConvertRequest): Promise<PlannedEstimate[]> {
    const out: PlannedEstimate[] = [];
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
      const credits = req.kind === 'url'
        ? priceSource('url', count, req.options, URL_ASSUMED_FETCH)
        : priceSource(req.kind, count, req.options);
      out.push({ name: s.name, mime, bytes: s.bytes, path: s.path, count, credits });
    }
    return out;
  }

  /**
   * Admits and starts a conversion: plan limits, then one gate reservation (with the idempotency
   * claim), then the insert. On a replay nothing is created; the caller's staged files stay
   * where they are (the request's clean-ups remove them).
   */
  async accept(p: Principal, given: ConvertRequest, from: SubmitContext): Promise<Submitted> {
    // file_/upl_ references become staged sources (hard links the conversion adopts); links not
    // adopted (a replay, a refusal) are removed whatever happens.
    const refs = await resolveSources(this.sql, this.blobs, p, given);
    try {
      return await this.admit(p, { ...given, sources: [...given.sources, ...refs.sources] }, given, from);
    } finally {
      await refs.release();
    }
  }

  private async admit(p: Principal, req: ConvertRequest, given: ConvertRequest, from: SubmitContext): Promise<Submitted> {
    const limits = this.billing.limits(p.plan);
    checkFileSizes(req.sources, limits);
    const planned = await this.plan(req);
    await checkPlanLimits(this.sql, p.accountId, limits,
      planned.map((s) => ({ name: s.name, bytes: s.bytes, pages: s.count.pages })), req.store);

    const endpoint = ENDPOINTS[req.kind];
    const idem: Idem | undefined = from.idempotencyKey === undefined ? undefined : {
      endpoint,
      key: from.idempotencyKey,
      fingerprint: await requestFingerprint(from.method, from.path,
        { ...req.options, store: req.store, files: req.fileRefs, uploads: req.uploadRefs }, req.metadata,
        // References are in the fingerprint by id; only the request's own bytes are hashed.
        given.sources.map((s) => s.path)),
    };
    const credits = planned.reduce((a, s) => a + s.credits, 0);
    const gated = !isRender(req.kind);
    let conversionId = newId('conv');

    if (gated) {
      const reserved = await this.reserve(p, conversionId, credits, limits, idem);
      if (reserved.kind === 'replay') return reserved;
      conversionId = reserved.conversionId;
    }
    try {
      return { kind: 'accepted', accepted: await this.persist(p, req, planned, conversionId, credits, gated, idem, limits) };
    } catch (err) {
      // Nothing of this conversion reached the ledger: give the gate its reservation back.
      if (gated) await this.billing.gate.release(p.accountId, conversionId).catch(() => {});
      if (!(err instanceof KeyTaken) || !idem) throw err;
      const claim = await findClaim(this.sql, p.accountId, idem.endpoint, idem.key);
      if (!claim) throw err;
      return this.replayOf(claim, idem);
    }
  }

  /** The gate's answer for a new conversion id: reserved (under that id) or a replay. */
  private async reserve(p: Principal, conversionId: string, credits: number, limits: PlanLimits, idem: Idem | undefined)
    : Promise<{ kind: 'reserved'; conversionId: string } | { kind: 'replay'; conversionId: string }> {
    const claim: IdempotencyClaim | undefined = idem && {
      key: `${p.accountId}:${idem.endpoint}:${idem.key}`, fingerprint: idem.fingerprint, ttlSeconds: IDEMPOTENCY_TTL_S,
    };
    const { gate, ledger } = this.billing;
    const req = { accountId: p.accountId, conversionId, credits, concurrencyLimit: limits.concurrency };
    this.audit.watch(p.accountId);
    let r = await reserveWithRebuild(gate, { ...req, idempotency: claim }, ledger.readLedger);
    if (r.kind === 'replay') {
      // The first request with this key may still be committing: wait for its claim in Postgres.
      const found = await awaitClaim(this.sql, p.accountId, idem!.endpoint, idem!.key, REPLAY_WAIT_MS);
      if (found) return this.replayOf(found, idem!);
      // The claim in the gate names a conversion that was never created (its request failed
      // after reserving). Postgres is the truth: go on without the gate's claim; the insert's
      // own claim still keeps concurrent retries to one conversion.
      r = await reserveWithRebuild(gate, req, ledger.readLedger);
    }
    if (r.kind === 'reserved') return { kind: 'reserved', conversionId };
    if (r.kind === 'refused') throw refusalError(r);
    throw new Error(`billing: unexpected reserve answer ${r.kind}`);
  }

  private replayOf(claim: { fingerprint: string; conversionId: string }, idem: Idem): { kind: 'replay'; conversionId: string } {
    if (claim.fingerprint !== idem.fingerprint) throw refusalError({ kind: 'refused', refusal: Refusal.IdempotencyKeyReused });
    return { kind: 'replay', conversionId: claim.conversionId };
  }

  private async persist(p: Principal, req: ConvertRequest, planned: PlannedEstimate[], conversionId: string,
    credits: number, gated: boolean, idem: Idem | undefined, limits: PlanLimits): Promise<Accepted> {
    const createdAt = new Date();
    const expiresAt = req.store ? null : new Date(createdAt.getTime() + RETENTION_MS);
    const sources: PlannedSource[] = planned.map((s) => {
      const id = newId('file');
      return { id, name: s.name, mime: s.mime, bytes: s.bytes, blob: this.blobs.nameFor(p.accountId, id), count: s.count, credits: s.credits };
    });
    const jobIds = sources.map(() => newId('job'));
    const conv = { id: conversionId, accountId: p.accountId, expiresAt };
    // Small Markdown renders are pure and fast: they are rendered before the insert and stored
    // completed in the same transaction, with no job at all (one commit on the cheap path).
    const rendered = await this.renderNow(req, planned);
    const outputs: NewFile[][] = [];
    // The blobs wait in pending/ until the rows are committed (see store/blobs.ts).
    const staged: Pending[] = [];
    try {
      for (let i = 0; i < sources.length; i++) staged.push(await this.blobs.stage(planned[i]!.path, sources[i]!.blob));
      if (rendered) {
        for (let i = 0; i < sources.length; i++) {
          const out = await this.outputFiles(p.accountId, sources[i]!, i, rendered[i]!);
          outputs.push(out.files);
          staged.push(...out.staged);
        }
      }
      await this.sql.begin(async (tx) => {
        const t = tx as unknown as Sql;
        if (idem && !await claimKey(t, { accountId: p.accountId, ...idem, conversionId })) throw new KeyTaken();
        // insertConversion opens its own transaction; inside this one it simply joins it.
        const joined = Object.assign(Object.create(null), { begin: (fn: (s: Sql) => unknown) => fn(t) }) as Sql;
        await insertConversion(joined, {
          id: conversionId, accountId: p.accountId, name: ENDPOINTS[req.kind], operation: isRender(req.kind) ? 'render' : 'parse',
          options: { ...req.options }, metadata: req.metadata, store: req.store, createdAt, expiresAt, creditsReserved: gated ? credits : 0,
        }, sources.map((s, i) => ({
          id: s.id, position: i * 8, role: 'source', name: s.name, mime: s.mime, status: 'queued', bytes: s.bytes,
          pages: s.count.pages, credits: s.credits, blob: s.blob,
        })));
        await countMonthlyFiles(t, p.accountId, sources.length, limits.filesPerMonth);
        if (gated) await recordReservation(t, p.accountId, conversionId, credits);
        if (rendered) {
          for (let i = 0; i < sources.length; i++) {
            await finishSource(joined, conv, sources[i]!.id, { outputs: outputs[i]!, pages: rendered[i]!.pageCount, credits: 0 });
          }
          return;
        }
        // One durable job per source, committed with the conversion: if this process dies now,
        // another one finds the jobs and runs them.
        await t`insert into jobs ${t(sources.map((s, i) => ({
          id: jobIds[i]!, conversion_id: conversionId, source_id: s.id, account_id: p.accountId,
        })))}`;
      });
    } catch (err) {
      // Refused or rolled back: the blobs go. A lost connection may have lost only the commit's
      // answer: the pending sweep keeps or removes them by the rows.
      if (!isDependencyDown(err)) await this.blobs.discard(staged);
      throw err;
    }
    await this.blobs.place(staged);
    const pdfPagesOf = (): number => (req.kind === 'pdf' ? sources.reduce((a, s) => a + s.count.pages, 0) : 0);
    if (rendered) return { conversionId, done: Promise.resolve(), pdfPages: pdfPagesOf(), sources: sources.length, capacity: false, finished: true };
    const capacity = !isRender(req.kind) && this.executor.saturated?.() === true;
    const started = capacity ? [] : await this.runner.runNow(jobIds);
    const done = Promise.all(started).then(() => undefined);
    return { conversionId, done, pdfPages: pdfPagesOf(), sources: sources.length, capacity };
  }

  /**
   * Charges the completed sources' credits (0 when the conversion is gone) and releases the rest.
   * Call it once every source of the conversion is done, from whichever process finished the
   * last one; calling it again (a retried job) changes nothing. Render conversions hold nothing.
   */
  async settleCredits(accountId: string, conversionId: string): Promise<void> {
    const [row] = await this.sql`select coalesce(sum(credits), 0)::int as charged from files
      where conversion_id = ${conversionId} and role = 'source' and status = 'completed'`;
    try {
      await this.billing.ledger.settle(accountId, conversionId, Number(row!.charged));
    } catch (err) {
      // The ledger may have settled and only the gate not heard: let the audit look at this account.
      this.audit.watch(accountId);
      throw err;
    }
  }

  /** Why this conversion cannot be answered synchronously, if it cannot. */
  static syncRefusal(a: Accepted): AsyncReason | undefined {
    if (a.sources > SYNC_MAX_SOURCES) return 'too_many_sources';
    if (a.pdfPages > SYNC_MAX_PDF_PAGES) return 'pages_exceed_sync_limit';
    return undefined;
  }

  /** Waits up to `seconds` for the conversion; returns the async reason when it is still going. */
  async waitFor(a: Accepted, seconds: number, reason: AsyncReason | undefined): Promise<AsyncReason | undefined> {
    let why = reason ?? ConversionService.syncRefusal(a) ?? (a.capacity ? 'capacity' : undefined);
    if (!why && seconds <= 0) why = 'respond_async';
    // Rendered in the request: done, unless the client asked not to wait (its preference holds).
    if (a.finished && !why) return undefined;
    if (!why) {
      const deadline = Date.now() + seconds * 1000;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        a.done.catch(() => {}),
        new Promise<void>((r) => { timer = setTimeout(r, seconds * 1000); }),
      ]);
      clearTimeout(timer);
      // Jobs another process took are followed in the database until the window ends.
      while (!(await this.isTerminal(a.conversionId)) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      if (!(await this.isTerminal(a.conversionId))) why = 'wait_timeout';
    }
    if (why) await setAsyncReason(this.sql, a.conversionId, why);
    return why;
  }

  private async isTerminal(conversionId: string): Promise<boolean> {
    const [row] = await this.sql`select status from conversions where id = ${conversionId}`;
    return !row || TERMINAL.has(row.status as string);
  }

  /**
   * Runs one durable job in this process: converts its source and records the outcome, guarded
   * by the job's lease so that only the process that holds the job can finish it. The process
   * that finishes a conversion's last source settles its credits.
   */
  async runJob(job: JobRow, signal: AbortSignal): Promise<void> {
    const [c] = await this.sql`
      select f.id as source_id, f.name, f.mime, f.blob, f.position, f.credits, c.id, c.account_id, c.name as endpoint,
             c.options, c.operation, c.expires_at
      from files f join conversions c on c.id = f.conversion_id where f.id = ${job.source_id}`;
    if (!c) return; // deleted under us: the job row went with it
    const kind = kindOfEndpoint(c.endpoint as string)!;
    const conv = { id: c.id as string, accountId: c.account_id as string, expiresAt: c.expires_at as Date | null };
    const guard = (tx: Sql): Promise<boolean> => completeJob(tx, this.runner.owner, job.id);
    const options = c.options as ConvertRequest['options'];
    const source: PlannedSource = {
      id: c.source_id as string, name: c.name as string, mime: c.mime as string, bytes: 0, blob: c.blob as string,
      count: { pages: 0, units: 0 }, credits: Number(c.credits ?? 0),
    };
    let status: ConversionStatus | null;
    let converting = false;
    let staged: Pending[] = [];
    // The source waits in pending/ for a moment after its commit (or, after a crash there, until
    // the pending sweep places it): try again later rather than fail the document.
    if (!(await this.blobs.exists(source.blob)) && (await this.blobs.isPending(source.blob))) {
      await handBack(this.sql, this.runner.owner, [job.id]).catch(() => {});
      return;
    }
    try {
      if (job.attempts > MAX_ATTEMPTS) {
        throw new ApiError('invalid_document', `The conversion stopped its worker ${job.attempts - 1} times; the document is not converted.`);
      }
      await markSourceRunning(this.sql, conv.id, source.id);
      let last = 0;
      const onProgress = (done: number, total: number): void => {
        const now = Date.now();
        if (now - last < PROGRESS_EVERY_MS && done < total) return;
        last = now;
        void setProgress(this.sql, this.runner.owner, job.id, done, total).catch(() => {});
      };
      const small = isRender(kind) && (await this.blobSize(source.blob)) <= INLINE_RENDER_BYTES;
      converting = true;
      const result = await (small ? this.inline : this.executor).run(
        { kind, path: this.blobs.pathOf(source.blob), name: source.name, mime: source.mime, options }, signal, onProgress,
      );
      converting = false;
      const index = Math.floor(Number(c.position) / 8);
      const out = await this.outputFiles(conv.accountId, source, index, result);
      staged = out.staged;
      const credits = kind === 'pdf' ? priceSource(kind, { pages: result.pageCount, units: result.pageCount }, options) : source.credits;
      status = await recording(signal, () => finishSource(this.sql, conv, source.id,
        { outputs: out.files, pages: result.pageCount, credits: Math.min(credits, source.credits) }, guard));
    } catch (err) {
      if (!converting && isDependencyDown(err)) {
        // The database failed, not the document: the job goes back to the queue for another try
        // (not counted as an attempt), or, while the database is still away, its lease runs out.
        // Staged outputs stay for the pending sweep: the commit may have happened.
        await handBack(this.sql, this.runner.owner, [job.id]).catch(() => {});
        return;
      }
      await this.blobs.discard(staged);
      staged = [];
      const problem = fileProblem(err, `/v1/conversions/${conv.id}`, conv.id);
      status = await recording(signal, () => finishSource(this.sql, conv, source.id, { error: problem }, guard)).catch(() => null);
    }
    // Recorded: the outputs go in place. Refused by the guard (another process holds the job now):
    // this run's copies go.
    if (status) await this.blobs.place(staged).catch((err: unknown) => this.billing.onError?.(err, `placing outputs of ${conv.id}`));
    else await this.blobs.discard(staged);
    if (status && TERMINAL.has(status) && c.operation !== 'render') {
      await this.settleCredits(conv.accountId, conv.id).catch((err: unknown) => this.billing.onError?.(err, `settling ${conv.id}`));
    }
  }

  /** Renders small Markdown sources in this thread; undefined when the request is not that. */
  private async renderNow(req: ConvertRequest, planned: PlannedEstimate[]): Promise<RunResult[] | undefined> {
    if (!isRender(req.kind) || planned.length > SYNC_MAX_SOURCES || planned.some((s) => s.bytes > INLINE_RENDER_BYTES)) return undefined;
    try {
      const signal = new AbortController().signal;
      return await Promise.all(planned.map((s) => this.inline.run(
        { kind: req.kind, path: s.path, name: s.name, mime: s.mime, options: req.options }, signal)));
    } catch {
      return undefined; // rendered as jobs instead, where a failure is recorded per file
    }
  }

  private async blobSize(blob: string): Promise<number> {
    return (await stat(this.blobs.pathOf(blob))).size;
  }

  /** Settles finished conversions whose settle was lost (their process died right after). */
  async settleLost(): Promise<number> {
    const rows = await this.sql`
      select c.id, c.account_id from conversions c
      where c.completed_at is not null and c.completed_at < now() - interval '5 seconds' and c.operation = 'parse'
        and exists (select 1 from ledger l where l.conversion_id = c.id and l.kind = 'reserve')
        and not exists (select 1 from ledger l where l.conversion_id = c.id and l.kind = 'release')
      limit 100`;
    for (const r of rows) await this.settleCredits(r.account_id as string, r.id as string);
    return rows.length;
  }

  /** The output rows of a source; outputs too large to keep inline are staged in pending/. */
  private async outputFiles(accountId: string, s: PlannedSource, index: number, result: RunResult): Promise<{ files: NewFile[]; staged: Pending[] }> {
    const base = s.name.replace(/\.[A-Za-z0-9]{1,8}$/, '') || 'document';
    const files: NewFile[] = [];
    const staged: Pending[] = [];
    for (let k = 0; k < result.outputs.length; k++) {
      const o = result.outputs[k]!;
      const id = newId('file');
      const bytes = Buffer.byteLength(o.content);
      let blob: string | null = null;
      // Named after the source and the output's place, not the row's id: whichever run of a job
      // records its outcome, the blob has the one name its row gives.
      if (bytes > INLINE_CONTENT_BYTES) blob = this.blobs.nameFor(accountId, `${s.id}.out${k}`);
      if (blob) {
        try {
          staged.push(await this.blobs.stageContent(blob, o.content));
        } catch (err) {
          await this.blobs.discard(staged);
          throw err;
        }
      }
      files.push({
        id, position: index * 8 + 1 + k, role: 'output', sourceId: s.id, name: base + EXT[o.format], mime: o.mime,
        status: 'completed', format: o.format, variant: result.variant, bytes, pages: result.pageCount,
        content: blob ? null : o.content, blob,
      });
    }
    return { files, staged };
  }

  /** Deletes a conversion; running work is cancelled and a reservation it still holds is
   *  released (a conversion deleted before it settled is not charged). Its blobs leave their
   *  place before the rows go, and are removed after (see store/blobs.ts). */
  async remove(accountId: string, id: string): Promise<boolean> {
    const row = await getConversionRow(this.sql, accountId, id);
    if (!row) return false;
    const named = await this.sql`select blob from files where conversion_id = ${id} and account_id = ${accountId} and blob is not null`;
    const moved = await this.blobs.unplace(named.map((r) => r.blob as string));
    let deleted: { blobs: string[]; settled?: Settlement } | undefined;
    try {
      // The rows and the release of the reservation go in one transaction: a process that dies
      // right after cannot leave credits reserved for a conversion that no longer exists.
      deleted = await this.sql.begin(async (tx) => {
        const t = tx as unknown as Sql;
        const joined = Object.assign(Object.create(null), { begin: (fn: (s: Sql) => unknown) => fn(t) }) as Sql;
        const blobs = await deleteConversionRows(joined, accountId, id);
        if (!blobs) return undefined;
        return { blobs, settled: row.operation === 'render' ? undefined : await settleRows(t, accountId, id, 0) };
      });
    } catch (err) {
      // Not deleted: the blobs go back. Maybe deleted (the commit's answer lost): the pending
      // sweep decides by the rows.
      if (!isDependencyDown(err)) await this.blobs.place(moved);
      throw err;
    }
    this.runner.abortConversion(id);
    await this.blobs.discard(moved);
    if (!deleted) return false; // deleted by another request meanwhile
    // The gate is told after the commit; if that is lost, the gate audit settles it.
    if (deleted.settled) {
      await this.billing.ledger.tell(accountId, id, deleted.settled).catch((err: unknown) => {
        this.audit.watch(accountId);
        this.billing.onError?.(err, `releasing ${id} in the gate`);
      });
    }
    // A large output recorded between the listing and the delete.
    const left = new Set(moved.map((m) => m.name));
    await this.blobs.remove(deleted.blobs.filter((b) => !left.has(b)));
    return true;
  }

  /** Places or removes blobs (of conversions and uploads) left in pending/ by a crash or a lost
   *  commit answer. */
  async resolvePending(graceMs = PENDING_GRACE_MS): Promise<{ placed: number; removed: number }> {
    return this.blobs.resolvePending(graceMs, async (names) => {
      const rows = await this.sql`
        select blob from files where blob in ${this.sql(names)}
        union all select blob from uploads where blob in ${this.sql(names)}
        union all select blob from upload_parts where blob in ${this.sql(names)}`;
      return new Set(rows.map((r) => r.blob as string));
    });
  }
}

/** How long a blob may wait in pending/ before the sweep decides by its rows: far longer than
 *  any transaction, including a job's outcome retried for its whole lease (recording). */
export const PENDING_GRACE_MS = Math.max(30_000, 3 * LEASE_S * 1000);

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

export function kindOfEndpoint(segment: string): ConverterKind | undefined {
  for (const [kind, ep] of Object.entries(ENDPOINTS)) if (ep === segment) return kind as ConverterKind;
  return undefined;
}
