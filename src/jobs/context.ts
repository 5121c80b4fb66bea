// What the parts of the conversion service share: the context they run in (its dependencies,
// built once by ConversionService), the shapes that pass between planning, admission, running
// and waiting, and the limits they read (sync, inline sizes, retention).
import type { CommitTurn } from './commit-turn.js';
import type { ApiError } from '../errors.js';
import type { ConverterKind, Count, Peek } from '../converters/types.js';
import type { FetchSettings } from '../converters/url.js';
import type { Gate } from '../billing/gate.js';
import type { Ledger } from '../billing/ledger.js';
import type { AuditCounts } from '../billing/audit.js';
import type { Plan, PlanLimits } from '../plans.js';
import type { Sql } from '../store/db.js';
import type { Blobs } from '../store/blobs.js';
import type { ConversionRow, FileRow, NewFile, RolledUp } from '../store/conversions.js';
import type { Problem } from '../errors.js';
import type { Executor } from './executor.js';
import type { GroupCommit } from './group-commit.js';
import type { JobRow } from './queue.js';

/** The service's dependencies and parts, handed to each of its steps. */
export interface ConversionContext {
  sql: Sql;
  blobs: Blobs;
  /** Where jobs run (the worker pool in the server); while it is `saturated`, new jobs wait in the table. */
  executor: Executor;
  /** The executor for small render jobs (Markdown → HTML/text): in-thread, never queued. */
  inline: Executor;
  billing: Billing;
  runner: JobStarter;
  /** Where finished renders are stored, many conversions per transaction. */
  group: GroupCommit;
  /** Mends the gate's copy of active accounts from the ledger (a settle it was not told, …). */
  audit: AuditWatch;
  urlFetch: FetchSettings;
  /** True once the service is stopping. */
  stopping(): boolean;
}

/** What a job's run recorded, as its transaction wrote it: the source's row, its outputs and
 *  the conversion as the roll-up left it. Undefined (no outcome) when this run did not record
 *  it itself (another process holds the job, the commit's answer was lost, it was aborted). */
export interface JobOutcome {
  sourceId: string;
  conversion: RolledUp;
  source: { status: 'completed' | 'failed'; pages: number | null; credits: number; error: Problem | null };
  outputs: NewFile[];
  /** The gate's available balance after this outcome's settle, when it ended the conversion
   *  and the gate answered: the answer shows it without asking again. */
  balance?: number;
}

/**
 * What admission and deletion need of the process's job runner (runner.ts): start the jobs just
 * committed, stop those of a deleted conversion. In an acceptor thread it is the process's one
 * runner, reached over the thread's link (src/server/acceptor-link.ts).
 */
export interface JobStarter {
  /** The lease owner the process's runner claims jobs as. */
  readonly owner: string;
  /** Whether jobs committed now should be claimed for this runner: false once it is stopping. */
  claims(): boolean;
  /** Starts these jobs, committed claimed by `owner`; a promise per job started, settled when
   *  it ends with what it recorded. */
  runClaimed(jobs: JobRow[]): Promise<Array<Promise<JobOutcome | undefined>>>;
  abortConversion(conversionId: string): void;
}

/** What the steps need of the gate audit (billing/audit.ts): accounts to watch, and a pass. */
export interface AuditWatch {
  watch(accountId: string): void;
  run(): Promise<AuditCounts>;
  /** The accounts watched now (the process's own audit; an acceptor thread's link has none). */
  watching?(): string[];
}

export type AsyncReason = 'respond_async' | 'too_many_sources' | 'pages_exceed_sync_limit' | 'capacity' | 'wait_timeout';

/** Sync limits of DESIGN.md §4. */
export const SYNC_MAX_SOURCES = 10;
export const SYNC_MAX_PDF_PAGES = 50;
/** Output contents up to this size are returned inline; all are downloadable. */
export const INLINE_CONTENT_BYTES = 1024 * 1024;
/**
 * Output contents up to this size are kept in their row; larger ones in a blob, read back for
 * the inline `content` of a GET. A PDF's Markdown (tens of KB) sent to Postgres as a row value
 * cost the event loop its socket writes and Postgres its compression and WAL, about 5 % of a
 * document's wall time through the API (B at `fast`); a blob is one file written off the loop.
 */
export const ROW_CONTENT_BYTES = 4 * 1024;
export const RETENTION_MS = 24 * 60 * 60 * 1000;

export interface Accepted {
  conversionId: string;
  /** Settles when the jobs this process started have ended (other processes may run the rest). */
  done: Promise<void>;
  /** What those jobs recorded, once they have ended; `jobs` of the conversion in all. */
  outcomes?: Promise<Array<JobOutcome | undefined>>;
  jobs?: number;
  pdfPages: number;
  sources: number;
  /** The pool was past its high-water mark: the jobs wait in the table for a free place. */
  capacity: boolean;
  /** Already terminal when accepted (rendered in the request). */
  finished?: boolean;
  /** The rows as its transaction wrote them (a conversion stored by group commit), to answer
   *  from without reading them back while they are what the answer shows: a finished render,
   *  or a conversion answered 202 for `storedReason` at once. */
  snapshot?: { row: ConversionRow; files: FileRow[] };
  /** The async reason written with the conversion (known before its insert). */
  storedReason?: AsyncReason;
  /** The gate's available balance as last answered to this request: right after this
   *  conversion's reservation (a paid submit), then after its settle when it finished here. */
  balance?: number;
}

export interface LifecycleOptions {
  /** The executor for small render jobs (Markdown → HTML/text): in-thread, never queued. */
  inline: Executor;
  /** An acceptor thread's link to the process's job runner and gate audit; without it the
   *  service runs its own (the process's main thread). */
  linked?: { runner: JobStarter; audit: AuditWatch };
  /** The process's one group commit at a time, when it has several acceptor threads. */
  commitTurn?: CommitTurn;
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

/**
 * Render sources run in this thread only while their cost is provably small: at most
 * INLINE_RENDER_BYTES in all (rendering is otherwise linear in the bytes: 64 KiB of prose, about
 * 2–3 ms) and at most INLINE_RENDER_DELIMITERS emphasis markers and dollars (`*`, `_`, `~`, `$`) in all (`_a` ×
 * 500: about 5 ms), the one input on which marked's work grows with the square of its size
 * (`_a` × 8,000: 38 ms; × 100,000: 25 s). Anything else goes to the pool like a document, off
 * the event loop.
 */
export const INLINE_RENDER_BYTES = 64 * 1024;
export const INLINE_RENDER_DELIMITERS = 500;

/** The emphasis markers and math dollars in some Markdown bytes (one linear pass, no decoding):
 *  each may start a token of its own. */
export function emphasisMarkers(bytes: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b === 0x2a || b === 0x5f || b === 0x7e || b === 0x24) n++;
  }
  return n;
}

/** Whether render sources of these bytes may be rendered in this thread (see above). */
export function renderableInline(sources: Uint8Array[]): boolean {
  let bytes = 0;
  let markers = 0;
  for (const s of sources) {
    bytes += s.length;
    if (bytes > INLINE_RENDER_BYTES) return false;
    markers += emphasisMarkers(s);
    if (markers > INLINE_RENDER_DELIMITERS) return false;
  }
  return true;
}

/** A submit either created a conversion or named the one its Idempotency-Key created. */
export type Submitted =
  | { kind: 'accepted'; accepted: Accepted }
  | { kind: 'replay'; conversionId: string };

/** Where the request came from, for the idempotency fingerprint. */
export interface SubmitContext {
  method: string;
  path: string;
  idempotencyKey?: string;
  /** The request's wait window: a reason to answer 202 that is known before the insert is
   *  stored with the conversion (no update after it), and the answer built from that row. */
  window?: WaitWindow;
}

/** How long the request waits for its conversion, and why not at all (Prefer: respond-async). */
export interface WaitWindow {
  seconds: number;
  reason?: AsyncReason;
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

export interface FetchedSource {
  url: string;
  kind: ConverterKind;
}

export interface PlannedSource {
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

export interface Idem {
  endpoint: string;
  key: string;
  fingerprint: string;
}
