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
// - A URL is fetched at admission (plan), by estimate and submit alike, and priced as the fetch
//   plus what it fetched, as its kind: the estimate is exact and submit reserves exactly that.
//   The fetched document becomes the source's blob and its job converts it without fetching
//   again; it is priced as stored and converted (a text page whose Content-Type names a charset
//   is re-encoded as UTF-8 first), and a fetched PDF's pages count towards the sync limit. A
//   fetch that fails makes that source a failed file of the new conversion (reserved and charged
//   nothing); the estimate answers with the same Problem.
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { ApiError, fileProblem, isDependencyDown } from '../errors.js';
import { sniff, peekBytes, peekFile, isRender, converterForMime, ENDPOINTS, type RunResult } from '../converters/registry.js';
import { renderCount } from '../converters/markdown.js';
import type { Converter, ConverterKind, ConvertOptions, Count, Peek } from '../converters/types.js';
import { fetchDocument, readUrl, type FetchSettings } from '../converters/url.js';
import { priceSource } from '../billing/pricing.js';
import { Refusal, refusalError, reserveWithRebuild, type Gate, type IdempotencyClaim } from '../billing/gate.js';
import { recordReservation, settleRows, type Ledger, type Settlement } from '../billing/ledger.js';
import { GateAudit } from '../billing/audit.js';
import type { Plan, PlanLimits } from '../billing/plans.js';
import {
  awaitClaim, checkFileSizes, checkPlanLimits, claimKey, countMonthlyFiles, findClaim, requestFingerprint,
  IDEMPOTENCY_TTL_S,
} from '../billing/admission.js';
import { answered, type Sql } from '../store/db.js';
import type { Blobs, Pending } from '../store/blobs.js';
import { newId } from '../store/ids.js';
import {
  insertConversion, markSourceRunning, finishSource, getConversionRow, setAsyncReason,
  deleteConversionRows, type NewFile, type ConversionStatus, type ConversionRow, type FileRow,
} from '../store/conversions.js';
import type { Principal } from '../server/auth.js';
import type { ConvertRequest, StagedSource } from '../server/convert-request.js';
import type { Executor } from './executor.js';
import { JobRunner } from './runner.js';
import { resolveSources } from '../uploads/refs.js';
import { completeJob, handBack, recordedStatus, setProgress, LEASE_S, MAX_ATTEMPTS, type JobRow } from './queue.js';
import { GroupCommit, fileRowsOf } from './group-commit.js';

export type AsyncReason = 'respond_async' | 'too_many_sources' | 'pages_exceed_sync_limit' | 'capacity' | 'wait_timeout';

/** Sync limits of DESIGN.md §4. */
export const SYNC_MAX_SOURCES = 10;
export const SYNC_MAX_PDF_PAGES = 50;
/** Output contents up to this size are returned inline; all are downloadable. */
export const INLINE_CONTENT_BYTES = 1024 * 1024;
export const RETENTION_MS = 24 * 60 * 60 * 1000;

const EXT: Record<string, string> = { markdown: '.md', text: '.txt', html: '.html', pages: '.pages.json' };

/** URL sources of one request fetched at once, at admission. */
const URL_FETCHES_AT_ONCE = 4;

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
  /** The stored rows of a conversion finished when accepted, to answer from without reading them back. */
  snapshot?: { row: ConversionRow; files: FileRow[] };
}

export interface LifecycleOptions {
  /** The executor for small render jobs (Markdown → HTML/text): in-thread, never queued. */
  inline: Executor;
  /** Jobs this process runs at once. */
  capacity: number;
  pollMs?: number;
  /** Milliseconds between the mending sweeps (default 10 s). */
  mendMs?: number;
  /** How URL sources are fetched at admission (ALLOW_PRIVATE_NETWORK; limits and the guard's
   *  check in tests). */
  urlFetch: FetchSettings;
}

/** Hands a file the service staged for a request to that request's clean-ups, which remove it
 *  whatever happens (a conversion that adopted it has already moved it away). */
export type Track = (path: string) => void;

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
  /** The first bytes, read once for sniffing and reused by an in-request render. */
  peek?: Peek;
  /** The bytes, for a render source held in memory (then `path` is empty). */
  data?: Buffer;
  mime: string;
  bytes: number;
  path: string;
  count: Count;
  credits: number;
  /** A URL source: where it was finally fetched from and the kind it converts as. */
  fetched?: FetchedSource;
  /** A URL source whose fetch failed: it costs nothing and is a failed file at submit. */
  failure?: ApiError;
}

interface FetchedSource {
  url: string;
  kind: ConverterKind;
}

interface PlannedSource {
  id: string;
  name: string;
  mime: string;
  bytes: number;
  /** Where the source's bytes are: a blob, or (a rendered inline source) its row's content. */
  blob: string | null;
  content?: string | null;
  count: Count;
  credits: number;
  fetched?: FetchedSource;
  failure?: ApiError;
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
  /** Where finished renders are stored, many conversions per transaction. */
  readonly group: GroupCommit;
  /** Mends the gate's copy of active accounts from the ledger (a settle it was not told, …). */
  readonly audit: GateAudit;
  private inline: Executor;
  private settleTimer?: NodeJS.Timeout;
  private stopping = false;
  private urlFetch: FetchSettings;
  private mendMs: number;

  constructor(private sql: Sql, private blobs: Blobs, private executor: Executor, private billing: Billing, life: LifecycleOptions) {
    this.inline = life.inline;
    this.group = new GroupCommit(sql);
    this.urlFetch = life.urlFetch;
    this.mendMs = life.mendMs ?? 10_000;
    this.audit = new GateAudit(sql, billing.gate);
    this.runner = new JobRunner(sql, (job, signal) => this.runJob(job, signal), { capacity: life.capacity, pollMs: life.pollMs });
  }

  /** Starts taking queued and abandoned jobs, settling conversions whose settle was lost, and
   *  auditing the gate's copy of the accounts active here against the ledger. */
  start(): void {
    this.runner.start();
    this.settleTimer = setInterval(() => void this.sweep().catch((err: unknown) => this.billing.onError?.(err, 'settle sweep')), this.mendMs);
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

  /**
   * The gate reservation of a submit whose insert failed while the database was away. The commit
   * may have happened with only its answer lost (the connection died): then the conversion runs
   * and settles as usual, and giving the reservation back now would leave the gate short of its
   * charge. So it is kept until the ledger answers, and released only if no reservation row is
   * there. Should this process stop first, the gate audit of the account releases it.
   */
  private releaseIfUncommitted(accountId: string, conversionId: string): void {
    this.audit.watch(accountId);
    void (async () => {
      for (let pause = 1_000; !this.stopping; pause = Math.min(pause * 2, 5_000)) {
        await new Promise((r) => setTimeout(r, pause).unref());
        try {
          const [row] = await this.sql`select 1 from ledger where conversion_id = ${conversionId} and kind = 'reserve'`;
          if (!row) await this.billing.gate.release(accountId, conversionId);
          return;
        } catch (err) {
          if (!isDependencyDown(err)) return this.billing.onError?.(err, `releasing ${conversionId}`);
        }
      }
    })();
  }

  /** Stops taking work; running jobs get `graceMs` to finish, the rest are handed back. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    clearInterval(this.settleTimer);
    await this.runner.stop(graceMs);
  }

  /**
   * Sniffs, counts and prices every staged source; 415 for a source that is not of the
   * endpoint's kind. A URL source is fetched here into a file handed to `track`, and priced as
   * the fetch plus what it fetched; a fetch that fails is kept as the source's `failure`.
   */
  async plan(req: ConvertRequest, track: Track): Promise<PlannedEstimate[]> {
    if (req.kind === 'url') {
      // Every source is a URL before anything is fetched.
      for (const s of req.sources) await sniff(req.kind, await peekFile(s.path, s.name, s.mime));
      return inOrder(req.sources, URL_FETCHES_AT_ONCE, (s) => this.planFetch(s, req.options, track));
    }
    const out: PlannedEstimate[] = [];
    for (const s of req.sources) {
      const peek = s.data ? peekBytes(s.data, s.name, s.mime) : await peekFile(s.path, s.name, s.mime);
      const conv = await sniff(req.kind, peek);
      const count = s.data ? renderCount(s.data.length) : await countOf(conv, s.path, s.name, req.options);
      const mime = s.mime && s.mime !== 'application/octet-stream' ? s.mime : conv.mediaTypes[0]!;
      out.push({
        name: s.name, peek, mime, bytes: s.bytes, path: s.path, data: s.data, count, credits: priceSource(req.kind, count, req.options),
      });
    }
    return out;
  }

  /** Fetches one URL source next to the staged files and prices what came back, as its kind. */
  private async planFetch(s: StagedSource, options: ConvertOptions, track: Track): Promise<PlannedEstimate> {
    const target = path.join(this.blobs.tmpDir, `fetch_${randomBytes(12).toString('hex')}`);
    try {
      const doc = await fetchDocument(await readUrl(s.path), target, this.urlFetch);
      // The dispatch the URL converter makes: the declared (or sniffed) type, then the bytes.
      const conv = await converterForMime({ bytes: doc.head, name: doc.name, mime: doc.mime });
      const count = await countOf(conv, doc.file, doc.name, options);
      return {
        name: s.name, mime: doc.mime, bytes: (await stat(doc.file)).size, path: doc.file, count,
        credits: priceSource('url', count, options, { kind: conv.kind, count }),
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
   * Admits and starts a conversion: plan limits, then one gate reservation (with the idempotency
   * claim), then the insert. On a replay nothing is created; the caller's staged files stay
   * where they are (the request's clean-ups remove them).
   */
  async accept(p: Principal, given: ConvertRequest, from: SubmitContext, track: Track): Promise<Submitted> {
    // file_/upl_ references become staged sources (hard links the conversion adopts); links not
    // adopted (a replay, a refusal) are removed whatever happens.
    const refs = await resolveSources(this.sql, this.blobs, p, given);
    try {
      return await this.admit(p, { ...given, sources: [...given.sources, ...refs.sources] }, given, from, track);
    } finally {
      await refs.release();
    }
  }

  private async admit(p: Principal, req: ConvertRequest, given: ConvertRequest, from: SubmitContext, track: Track): Promise<Submitted> {
    const limits = this.billing.limits(p.plan);
    checkFileSizes(req.sources, limits);
    const endpoint = ENDPOINTS[req.kind];
    const idem: Idem | undefined = from.idempotencyKey === undefined ? undefined : {
      endpoint,
      key: from.idempotencyKey,
      fingerprint: await requestFingerprint(from.method, from.path,
        { ...req.options, store: req.store, files: req.fileRefs, uploads: req.uploadRefs }, req.metadata,
        // References are in the fingerprint by id; only the request's own bytes are hashed.
        given.sources),
    };
    // A retry of a committed URL conversion is answered before its URLs are fetched again (other
    // kinds only read local files, and are replayed by the gate's claim as before).
    if (req.kind === 'url' && idem) {
      const committed = await findClaim(this.sql, p.accountId, idem.endpoint, idem.key);
      if (committed) return this.replayOf(committed, idem);
    }

    const planned = await this.plan(req, track);
    // A URL's size is known once it is fetched: the plan's per-file size applies to that too.
    if (req.kind === 'url') checkFileSizes(planned, limits);
    await checkPlanLimits(this.sql, p.accountId, limits,
      planned.map((s) => ({ name: s.name, bytes: s.bytes, pages: s.count.pages })), req.store, !isRender(req.kind));

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
      // Nothing of this conversion reached the ledger: give the gate its reservation back. With
      // the database away the insert may have committed all the same: the ledger says, later.
      if (gated && isDependencyDown(err)) this.releaseIfUncommitted(p.accountId, conversionId);
      else if (gated) await this.billing.gate.release(p.accountId, conversionId).catch(() => {});
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
    // Small Markdown renders are pure and fast: they are rendered before the insert and stored
    // completed in the same transaction, with no job at all (one commit on the cheap path).
    const rendered = await this.renderNow(req, planned);
    const sources: PlannedSource[] = planned.map((s) => {
      const id = newId('file');
      // A rendered source sent inline is kept in its row like a small output (no job will read
      // it from disk); bytes Postgres text cannot hold (NUL) go to a blob as any other source.
      const held = rendered !== undefined && s.data !== undefined && !s.data.includes(0);
      return {
        id, name: s.name, mime: s.mime, bytes: s.bytes, count: s.count, credits: s.credits,
        blob: held ? null : this.blobs.nameFor(p.accountId, id), content: held ? s.data!.toString('utf8') : null,
        fetched: s.fetched, failure: s.failure,
      };
    });
    // A URL whose fetch failed at admission has nothing left to convert: it gets no job.
    const jobs = sources.flatMap((s) => (s.failure ? [] : [{ id: newId('job'), sourceId: s.id }]));
    const conv = { id: conversionId, accountId: p.accountId, expiresAt };
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
        if (blob) staged.push(await (s.data ? this.blobs.stageContent(blob, s.data) : this.blobs.stage(s.path, blob)));
      }
      if (rendered) {
        for (let i = 0; i < sources.length; i++) {
          const out = await this.outputFiles(p.accountId, sources[i]!, i, rendered[i]!);
          outputs.push(out.files);
          staged.push(...out.staged);
        }
      }
      // Without an Idempotency-Key to claim, a finished render joins the next group commit.
      if (rendered && !idem) {
        const finished = finishedRender(p.accountId, conversionId, req, createdAt, expiresAt, sources, rendered, outputs);
        await this.group.add({ ...finished, monthlyFiles: sources.length, monthlyLimit: limits.filesPerMonth });
        snapshot = { row: finished.row, files: fileRowsOf(finished.row, finished.files) };
      } else await this.sql.begin(async (tx) => {
        const t = tx as unknown as Sql;
        if (idem && !await claimKey(t, { accountId: p.accountId, ...idem, conversionId })) throw new KeyTaken();
        // insertConversion opens its own transaction; inside this one it simply joins it.
        const joined = Object.assign(Object.create(null), { begin: (fn: (s: Sql) => unknown) => fn(t) }) as Sql;
        await insertConversion(joined, {
          id: conversionId, accountId: p.accountId, name: ENDPOINTS[req.kind], operation: isRender(req.kind) ? 'render' : 'parse',
          options: { ...req.options }, metadata: req.metadata, store: req.store, createdAt, expiresAt, creditsReserved: gated ? credits : 0,
        }, sources.map((s, i) => ({
          id: s.id, position: i * 8, role: 'source', name: s.name, mime: s.mime, status: 'queued', bytes: s.bytes,
          pages: s.failure ? null : s.count.pages, credits: s.credits, blob: s.blob, content: s.content, fetched: s.fetched,
        })));
        await countMonthlyFiles(t, p.accountId, sources.length, limits.filesPerMonth);
        if (gated) await recordReservation(t, p.accountId, conversionId, credits);
        for (const s of sources) {
          if (s.failure) await finishSource(joined, conv, s.id, { error: fileProblem(s.failure, `/v1/conversions/${conversionId}`, conversionId) }, undefined, settle);
        }
        if (rendered) {
          for (let i = 0; i < sources.length; i++) {
            await finishSource(joined, conv, sources[i]!.id, { outputs: outputs[i]!, pages: rendered[i]!.pageCount, credits: 0 });
          }
          return;
        }
        // One durable job per source, committed with the conversion: if this process dies now,
        // another one finds the jobs and runs them.
        if (jobs.length === 0) return;
        await t`insert into jobs ${t(jobs.map((j) => ({
          id: j.id, conversion_id: conversionId, source_id: j.sourceId, account_id: p.accountId,
        })))}`;
      });
    } catch (err) {
      // Refused or rolled back: the blobs go. A lost connection may have lost only the commit's
      // answer: the pending sweep keeps or removes them by the rows.
      if (!isDependencyDown(err)) await this.blobs.discard(staged);
      throw err;
    }
    await this.blobs.place(staged);
    // PDF pages sent, or fetched from a URL, count towards the sync limit alike.
    const pdfPagesOf = (): number => sources.reduce((a, s) => a + ((s.fetched?.kind ?? req.kind) === 'pdf' ? s.count.pages : 0), 0);
    if (rendered) return { conversionId, done: Promise.resolve(), pdfPages: pdfPagesOf(), sources: sources.length, capacity: false, finished: true, snapshot };
    if (jobs.length === 0) {
      // Every URL failed to fetch: the conversion ended failed (and settled) in its insert.
      if (settled) await this.tellGate(p.accountId, conversionId, settled);
      return { conversionId, done: Promise.resolve(), pdfPages: 0, sources: sources.length, capacity: false, finished: true };
    }
    const capacity = !isRender(req.kind) && this.executor.saturated?.() === true;
    const started = capacity ? [] : await this.runner.runNow(jobs.map((j) => j.id));
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
    if (why) await answered(setAsyncReason(this.sql, a.conversionId, why));
    return why;
  }

  private async isTerminal(conversionId: string): Promise<boolean> {
    const [row] = await answered(this.sql`select status from conversions where id = ${conversionId}`);
    return !row || TERMINAL.has(row.status as string);
  }

  /**
   * Runs one durable job in this process: converts its source and records the outcome, guarded
   * by the job's lease so that only the process that holds the job can finish it. The process
   * that finishes a conversion's last source settles its credits.
   */
  async runJob(job: JobRow, signal: AbortSignal): Promise<void> {
    const [c] = await this.sql`
      select f.id as source_id, f.name, f.mime, f.blob, f.position, f.credits, f.fetched_from, f.fetched_kind,
             c.id, c.account_id, c.name as endpoint, c.options, c.operation, c.expires_at
      from files f join conversions c on c.id = f.conversion_id where f.id = ${job.source_id}`;
    if (!c) return; // deleted under us: the job row went with it
    const kind = kindOfEndpoint(c.endpoint as string)!;
    const conv = { id: c.id as string, accountId: c.account_id as string, expiresAt: c.expires_at as Date | null };
    const guard = (tx: Sql): Promise<boolean> => completeJob(tx, this.runner.owner, job.id);
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
    // follows a commit whose answer was lost: the outcome is recorded, its outputs must stay.
    let tries = 0;
    const record = (outcome: Parameters<typeof finishSource>[3]): Promise<ConversionStatus | null> => recording(signal, async () => {
      const retry = tries++ > 0;
      const recorded = await finishSource(this.sql, conv, source.id, outcome, guard, settle);
      return recorded === null && retry ? recordedStatus(this.sql, this.runner.owner, job.id) : recorded;
    });
    let status: ConversionStatus | null;
    let converting = false;
    let staged: Pending[] = [];
    // The source waits in pending/ for a moment after its commit (or, after a crash there, until
    // the pending sweep places it): try again later rather than fail the document.
    const blob = c.blob as string;
    if (!(await this.blobs.exists(blob)) && (await this.blobs.isPending(blob))) {
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
      // A job's source is always a blob: only sources rendered in their request are kept in rows.
      const file = this.blobs.pathOf(c.blob as string);
      const small = isRender(kind) && (await stat(file)).size <= INLINE_RENDER_BYTES;
      const task = fetched
        ? { kind: fetched.kind, options: { ...options, baseUrl: fetched.url } }
        : { kind, options };
      converting = true;
      const result = await (small ? this.inline : this.executor).run(
        { ...task, path: file, name: source.name, mime: source.mime }, signal, onProgress,
      );
      converting = false;
      const index = Math.floor(Number(c.position) / 8);
      const out = await this.outputFiles(conv.accountId, source, index, result);
      staged = out.staged;
      const credits = chargeFor(kind, fetched?.kind, result.pageCount, options, source.credits);
      status = await record({ outputs: out.files, pages: result.pageCount, credits });
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
      status = await record({ error: problem }).catch(() => null);
    }
    // Recorded: the outputs go in place. Refused by the guard (another process holds the job now):
    // this run's copies go.
    if (status) await this.blobs.place(staged).catch((err: unknown) => this.billing.onError?.(err, `placing outputs of ${conv.id}`));
    else await this.blobs.discard(staged);
    if (settled) await this.tellGate(conv.accountId, conv.id, settled);
  }

  /** Tells the gate a settlement committed with the rows; when that is lost, the audit mends it. */
  private async tellGate(accountId: string, conversionId: string, s: Settlement): Promise<void> {
    await this.billing.ledger.tell(accountId, conversionId, s).catch((err: unknown) => {
      this.audit.watch(accountId);
      this.billing.onError?.(err, `settling ${conversionId}`);
    });
  }

  /** Renders small Markdown sources in this thread; undefined when the request is not that. */
  private async renderNow(req: ConvertRequest, planned: PlannedEstimate[]): Promise<RunResult[] | undefined> {
    if (!isRender(req.kind) || planned.length > SYNC_MAX_SOURCES || planned.some((s) => s.bytes > INLINE_RENDER_BYTES)) return undefined;
    try {
      const signal = new AbortController().signal;
      return await Promise.all(planned.map((s) => this.inline.run(
        { kind: req.kind, path: s.path, data: s.data, name: s.name, mime: s.mime, options: req.options, peek: s.peek }, signal)));
    } catch {
      return undefined; // rendered as jobs instead, where a failure is recorded per file
    }
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

/** The rows of a render conversion whose every source was rendered in the request. */
function finishedRender(accountId: string, id: string, req: ConvertRequest, createdAt: Date, expiresAt: Date | null,
  sources: PlannedSource[], rendered: RunResult[], outputs: NewFile[][]): { row: ConversionRow; files: NewFile[] } {
  const row: ConversionRow = {
    id, account_id: accountId, name: ENDPOINTS[req.kind], operation: 'render', status: 'completed', async_reason: null,
    options: { ...req.options }, metadata: req.metadata ?? null, store: req.store, credits_reserved: 0, credits_charged: 0,
    created_at: createdAt, completed_at: new Date(), expires_at: expiresAt,
  };
  const files: NewFile[] = sources.flatMap((s, i) => [{
    id: s.id, position: i * 8, role: 'source' as const, name: s.name, mime: s.mime, status: 'completed' as const,
    bytes: s.bytes, pages: rendered[i]!.pageCount, credits: 0, blob: s.blob, content: s.content,
  }, ...outputs[i]!]);
  return { row, files };
}

/**
 * What a converted source costs: the price reserved for it, except that a PDF (sent, or fetched
 * from a URL) costs the pages the converter processed, never more than was reserved.
 */
function chargeFor(kind: ConverterKind, fetchedKind: ConverterKind | undefined, pageCount: number,
  options: ConvertOptions, reserved: number): number {
  const pages: Count = { pages: pageCount, units: pageCount };
  if (kind === 'pdf') return Math.min(reserved, priceSource('pdf', pages, options));
  if (kind === 'url' && fetchedKind === 'pdf') return Math.min(reserved, priceSource('url', pages, options, { kind: 'pdf', count: pages }));
  return reserved;
}

/** A converter's count; a failure that is not already an ApiError is the document's fault (422). */
async function countOf(conv: Converter, file: string, name: string, options: ConvertOptions): Promise<Count> {
  try {
    return await conv.count(file, options);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError('invalid_document', `"${name}" could not be read: ${(err as Error).message}`);
  }
}

/** `fn` over `items`, at most `limit` at a time; the results in the items' order. */
async function inOrder<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

export function kindOfEndpoint(segment: string): ConverterKind | undefined {
  for (const [kind, ep] of Object.entries(ENDPOINTS)) if (ep === segment) return kind as ConverterKind;
  return undefined;
}
