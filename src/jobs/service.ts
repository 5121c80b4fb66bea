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
//   if that transaction fails, the gate reservation is released — at once when the database
//   said so, or, when the database went away and the commit may have happened, once the ledger
//   answers without the row.
// - Idempotency is also claimed in Postgres in that transaction (idempotency_keys), so that a
//   lost Redis cannot create a second conversion: a conflict there is answered as a replay.
// - A finished conversion is charged the credits of its completed sources (failed ones cost
//   nothing), in the transaction that ends it; the gate is told after (the gate audit mends a
//   telling that is lost). A conversion deleted before it settled is charged nothing.
// - A URL is fetched at admission (plan), by estimate and submit alike, and priced as the fetch
//   plus what it fetched, as its kind: the estimate is exact and submit reserves exactly that.
//   The fetched document becomes the source's blob and its job converts it without fetching
//   again; it is priced as stored and converted (a text page whose Content-Type names a charset
//   is re-encoded as UTF-8 first), and a fetched PDF's pages count towards the sync limit. A
//   fetch that fails makes that source a failed file of the new conversion (reserved and charged
//   nothing); the estimate answers with the same Problem.
//
// ConversionService is the façade the server uses: each of its steps is a module of this folder
// (index.ts lists them), given the service's context (context.ts).
import type { Sql } from '../store/db.js';
import type { Blobs } from '../store/blobs.js';
import type { ConvertRequest } from '../types.js';
import type { Principal } from '../store/accounts.js';
import type { PlanLimits } from '../plans.js';
import { GateAudit } from '../billing/audit.js';
import type { Executor } from './executor.js';
import { JobRunner } from './runner.js';
import type { JobRow } from './queue.js';
import { GroupCommit } from './group-commit.js';
import type {
  Accepted, AsyncReason, AuditWatch, Billing, ConversionContext, Idem, LifecycleOptions, PlannedEstimate, SubmitContext, Submitted, Track, WaitWindow, JobOutcome,
} from './context.js';
import * as planning from './plan.js';
import * as admission from './admit.js';
import * as storing from './persist.js';
import * as running from './run-job.js';
import * as settlement from './settle.js';
import * as waiting from './wait.js';
import * as deleting from './remove.js';

export {
  SYNC_MAX_SOURCES, SYNC_MAX_PDF_PAGES, INLINE_CONTENT_BYTES, RETENTION_MS, INLINE_RENDER_BYTES,
  type AsyncReason, type Accepted, type LifecycleOptions, type Track, type Submitted, type SubmitContext, type Billing,
  type PlannedEstimate, type JobStarter, type AuditWatch,
} from './context.js';
export { PENDING_GRACE_MS } from './settle.js';
export { recording, kindOfEndpoint } from './run-job.js';

export class ConversionService {
  /** The process's job runner; undefined in an acceptor thread, which reaches it over its link. */
  readonly runner?: JobRunner;
  /** Where finished renders are stored, many conversions per transaction. */
  readonly group: GroupCommit;
  /** Mends the gate's copy of active accounts from the ledger (a settle it was not told, …). */
  readonly audit: AuditWatch;
  private ctx: ConversionContext;
  private settleTimer?: NodeJS.Timeout;
  private stopping = false;
  private mendMs: number;

  constructor(sql: Sql, blobs: Blobs, executor: Executor, private billing: Billing, life: LifecycleOptions) {
    this.group = new GroupCommit(sql, life.commitTurn);
    this.mendMs = life.mendMs ?? 10_000;
    if (!life.linked) {
      this.audit = new GateAudit(sql, billing.gate);
      this.runner = new JobRunner(sql, (job, signal) => this.runJob(job, signal), { capacity: life.capacity, pollMs: life.pollMs });
    } else {
      this.audit = life.linked.audit;
    }
    this.ctx = {
      sql, blobs, executor, inline: life.inline, billing, runner: this.runner ?? life.linked!.runner, group: this.group, audit: this.audit,
      urlFetch: life.urlFetch, stopping: () => this.stopping,
    };
  }

  /** Starts taking queued and abandoned jobs, settling conversions whose settle was lost, and
   *  auditing the gate's copy of the accounts active here against the ledger. An acceptor
   *  thread's service starts none of these: its process does. */
  start(): void {
    if (!this.runner) return;
    this.runner.start();
    this.settleTimer = setInterval(() => void settlement.sweep(this.ctx).catch((err: unknown) => this.billing.onError?.(err, 'settle sweep')), this.mendMs);
    this.settleTimer.unref();
  }

  /** True once stop() was called: long answers (event streams) end, sync waits answer 202. */
  isStopping(): boolean {
    return this.stopping;
  }

  /** Stops taking work; running jobs get `graceMs` to finish, the rest are handed back. From
   *  now on a sync wait whose conversion is not done answers at once (202). */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    clearInterval(this.settleTimer);
    await this.runner?.stop(graceMs);
  }

  /**
   * Sniffs, counts and prices every staged source; 415 for a source that is not of the
   * endpoint's kind. A URL source is fetched here into a file handed to `track`, and priced as
   * the fetch plus what it fetched; a fetch that fails is kept as the source's `failure`.
   */
  plan(req: ConvertRequest, track: Track): Promise<PlannedEstimate[]> {
    return planning.planSources(this.ctx, req, track);
  }

  /**
   * Admits and starts a conversion: plan limits, then one gate reservation (with the idempotency
   * claim), then the insert. On a replay nothing is created; the caller's staged files stay
   * where they are (the request's clean-ups remove them).
   */
  accept(p: Principal, given: ConvertRequest, from: SubmitContext, track: Track): Promise<Submitted> {
    return admission.accept(this.ctx, (...args) => this.persist(...args), p, given, from, track);
  }

  /** The insert step of admission (persist.ts), a member so that it is looked up on the service
   *  at each call (the lost-commit tests wrap it). */
  private persist(p: Principal, req: ConvertRequest, planned: PlannedEstimate[], conversionId: string,
    credits: number, gated: boolean, idem: Idem | undefined, limits: PlanLimits, window?: WaitWindow): Promise<Accepted> {
    return storing.persist(this.ctx, p, req, planned, conversionId, credits, gated, idem, limits, window);
  }

  /** Why this conversion cannot be answered synchronously, if it cannot. */
  static syncRefusal(a: Accepted): AsyncReason | undefined {
    return waiting.syncRefusal(a);
  }

  /** Waits up to `seconds` for the conversion; returns the async reason when it is still going. */
  waitFor(a: Accepted, seconds: number, reason: AsyncReason | undefined): Promise<AsyncReason | undefined> {
    return waiting.waitFor(this.ctx, a, seconds, reason);
  }

  /**
   * Runs one durable job in this process: converts its source and records the outcome, guarded
   * by the job's lease so that only the process that holds the job can finish it. The process
   * that finishes a conversion's last source settles its credits in the same transaction.
   */
  runJob(job: JobRow, signal: AbortSignal): Promise<JobOutcome | undefined> {
    return running.runJob(this.ctx, job, signal);
  }

  /** Settles finished conversions whose settle was lost (their process died right after). */
  settleLost(): Promise<number> {
    return settlement.settleLost(this.ctx);
  }

  /** Deletes a conversion; running work is cancelled and a reservation it still holds is
   *  released (a conversion deleted before it settled is not charged). */
  remove(accountId: string, id: string): Promise<boolean> {
    return deleting.remove(this.ctx, accountId, id);
  }

  /** Places or removes blobs (of conversions and uploads) left in pending/ by a crash or a lost
   *  commit answer. */
  resolvePending(graceMs = settlement.PENDING_GRACE_MS): Promise<{ placed: number; removed: number }> {
    return settlement.resolvePending(this.ctx, graceMs);
  }
}
