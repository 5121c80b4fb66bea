// Answering inside the wait window: why a conversion cannot be answered synchronously, and the
// wait for it (its own jobs, then the database for jobs another process took) that ends with it
// terminal or with the async reason stored on its row for the 202.
import { answered } from '../store/db.js';
import { setAsyncReason } from '../store/conversions.js';
import { SYNC_MAX_PDF_PAGES, SYNC_MAX_SOURCES, type Accepted, type AsyncReason, type ConversionContext, type JobOutcome } from './context.js';
import { fileRowsOf } from './group-commit.js';

const TERMINAL: ReadonlySet<string> = new Set(['completed', 'completed_with_errors', 'failed']);

/** Why this conversion cannot be answered synchronously, if it cannot. */
export function syncRefusal(a: Pick<Accepted, 'sources' | 'pdfPages'>): AsyncReason | undefined {
  if (a.sources > SYNC_MAX_SOURCES) return 'too_many_sources';
  if (a.pdfPages > SYNC_MAX_PDF_PAGES) return 'pages_exceed_sync_limit';
  return undefined;
}

/** The reason a conversion with these counts is answered 202 without waiting, if it is
 *  (waitFor decides the same from the same values). */
export function reasonUpFront(window: { seconds: number; reason?: AsyncReason }, a: Pick<Accepted, 'sources' | 'pdfPages' | 'capacity'>)
  : AsyncReason | undefined {
  const why = window.reason ?? syncRefusal(a) ?? (a.capacity ? 'capacity' : undefined);
  return !why && window.seconds <= 0 ? 'respond_async' : why;
}

/** Waits up to `seconds` for the conversion; returns the async reason when it is still going. */
export async function waitFor(ctx: Pick<ConversionContext, 'sql' | 'stopping'>, a: Accepted, seconds: number,
  reason: AsyncReason | undefined): Promise<AsyncReason | undefined> {
  let why = reasonUpFront({ seconds, reason }, a);
  // Rendered in the request: done, unless the client asked not to wait (its preference holds).
  if (a.finished && !why) return undefined;
  if (!why) {
    const deadline = Date.now() + seconds * 1000;
    let timer: NodeJS.Timeout | undefined;
    const jobsEnd: Promise<Array<JobOutcome | undefined> | undefined> = a.outcomes ?? a.done.then(() => undefined);
    const ended = await Promise.race([
      jobsEnd.catch(() => undefined),
      new Promise<undefined>((r) => { timer = setTimeout(() => r(undefined), seconds * 1000); }),
    ]);
    clearTimeout(timer);
    // Every job ran here and said what it recorded: the answer is built from that, not read.
    const final = Array.isArray(ended) ? finishedSnapshot(a, ended) : undefined;
    if (final) {
      a.snapshot = final;
      a.finished = true;
      // The balance the gate answered the settle that ended it (here); else it is read.
      a.balance = endingOutcome(ended!)?.balance;
      return undefined;
    }
    // Jobs another process took are followed in the database until the window ends, or until
    // this server stops: its jobs were handed back, and the client gets its 202 now.
    while (!(await isTerminal(ctx, a.conversionId)) && Date.now() < deadline && !ctx.stopping()) {
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!(await isTerminal(ctx, a.conversionId))) why = 'wait_timeout';
  }
  // A reason known before the insert was written with the conversion.
  if (why && why !== a.storedReason) await answered(setAsyncReason(ctx.sql, a.conversionId, why));
  return why;
}

async function isTerminal(ctx: Pick<ConversionContext, 'sql'>, conversionId: string): Promise<boolean> {
  const [row] = await answered(ctx.sql`select status from conversions where id = ${conversionId}`);
  return !row || TERMINAL.has(row.status as string);
}

/**
 * The conversion as its transactions left it, from the rows its insert wrote and what each of its
 * jobs recorded: undefined unless every job ran in this process, recorded its own outcome and one
 * of them ended the conversion (that one's roll-up is the conversion's final status, completion
 * time and charge).
 */
export function finishedSnapshot(a: Accepted, outcomes: Array<JobOutcome | undefined>): Accepted['snapshot'] {
  const stored = a.snapshot;
  if (!stored || a.jobs === undefined || outcomes.length !== a.jobs) return undefined;
  const recorded = outcomes.filter((o): o is JobOutcome => o !== undefined);
  if (recorded.length !== outcomes.length) return undefined;
  const last = endingOutcome(recorded);
  if (!last) return undefined;
  const row = { ...stored.row, status: last.conversion.status, completed_at: last.conversion.completedAt, credits_charged: last.conversion.charged };
  const bySource = new Map(recorded.map((o) => [o.sourceId, o]));
  const files = stored.files.map((f) => {
    const o = bySource.get(f.id);
    if (!o) return f;
    return { ...f, status: o.source.status, credits: o.source.credits, error: o.source.error, ...(o.source.status === 'completed' ? { pages: o.source.pages } : {}) };
  });
  files.push(...recorded.flatMap((o) => fileRowsOf(row, o.outputs)));
  return { row, files: files.sort((x, y) => x.position - y.position) };
}

/** The outcome whose roll-up ended the conversion, among those its jobs recorded here. */
function endingOutcome(outcomes: Array<JobOutcome | undefined>): JobOutcome | undefined {
  return outcomes.find((o): o is JobOutcome => o !== undefined && TERMINAL.has(o.conversion.status));
}
