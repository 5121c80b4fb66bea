// The delivery loop, one per server process (started by startApp, stopped by its close()).
// Each tick claims due deliveries (SKIP LOCKED, so processes sharing a database split the work),
// sends them concurrently (at most MAX_IN_FLIGHT at a time), records each outcome and schedules
// the retry. The timer is set to the next due delivery, at most `pollMs` away (deliveries
// enqueued by other processes are found by that poll); an event enqueued by this process wakes it
// at once. `timeScale` shrinks every delay of the retry schedule (tests run it in milliseconds).
import type { Sql } from '../store/db.js';
import type { Logger } from '../log.js';
import { createSender, type Sender } from './deliver.js';
import { onEnqueue } from './outbox.js';
import { claimDue, msUntilNextDue, recordAttempt, type Claimed } from './store.js';

/** Delays before retry n (after try n failed): ≈ 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 3 h, 6 h. */
export const RETRY_DELAYS_S = [5, 30, 120, 600, 1800, 3600, 3 * 3600, 6 * 3600];
/** The first try plus one per retry delay; then the delivery is failed. */
export const MAX_ATTEMPTS = RETRY_DELAYS_S.length + 1;
const MAX_IN_FLIGHT = 32;
/** After a wake, re-check this often: the enqueuing transaction may not have committed yet. */
const WAKE_RECHECKS_MS = [0, 10, 30, 100, 400];

export interface DispatcherOptions {
  sql: Sql;
  log: Logger;
  allowPrivateNetwork: boolean;
  /** 1 in production; 0.001 turns 5 s into 5 ms. */
  timeScale: number;
  /** Time allowed for one try (connect, send, answer), not scaled. */
  timeoutMs: number;
  pollMs?: number;
  /** Called once per recorded try (metrics). */
  onOutcome?: (outcome: 'delivered' | 'retry' | 'failed' | 'disabled') => void;
}

/** The wait before the next try after `attempt` failed, or null when it was the last. */
export function retryDelayMs(attempt: number, retryAfterS: number | null, timeScale: number): number | null {
  if (attempt >= MAX_ATTEMPTS) return null;
  const backoff = RETRY_DELAYS_S[attempt - 1]!;
  // Never sooner than the receiver asked, never later than the longest step of the schedule.
  const wait = Math.min(Math.max(backoff, retryAfterS ?? 0), RETRY_DELAYS_S[RETRY_DELAYS_S.length - 1]!);
  return wait * 1000 * timeScale;
}

export class WebhookDispatcher {
  readonly sender: Sender;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private timer?: NodeJS.Timeout;
  private timerAt = Infinity;
  private ticking?: Promise<void>;
  private rerun = false;
  private stopped = true;
  private inFlight = new Set<Promise<void>>();
  private unsubscribe?: () => void;
  /** How often an event enqueued by this process woke the loop (observed by tests). */
  wakes = 0;

  constructor(private opts: DispatcherOptions) {
    this.sender = createSender({ allowPrivateNetwork: opts.allowPrivateNetwork, timeoutMs: opts.timeoutMs });
    this.pollMs = opts.pollMs ?? Math.min(1000, Math.max(50, 1000 * opts.timeScale));
    // Long enough that a live process always records before another may take the delivery over.
    this.leaseMs = opts.timeoutMs + Math.max(5000, opts.timeoutMs);
  }

  start(): void {
    this.stopped = false;
    this.unsubscribe = onEnqueue(() => this.wake());
    this.arm(0);
  }

  /** Looks for work now and a few times shortly after. */
  wake(): void {
    this.wakes++;
    for (const ms of WAKE_RECHECKS_MS) this.arm(ms);
  }

  /** Stops claiming, lets tries in flight finish (each is bounded by the timeout) and records them. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribe?.();
    clearTimeout(this.timer);
    await this.ticking;
    await Promise.allSettled([...this.inFlight]);
    await this.sender.close();
  }

  /** Runs a tick in `ms` unless one is already set to run sooner. */
  private arm(ms: number): void {
    if (this.stopped) return;
    const at = Date.now() + Math.max(0, ms);
    if (this.timer && at >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.run();
    }, Math.max(0, ms));
    this.timer.unref();
  }

  private run(): void {
    if (this.ticking) { this.rerun = true; return; }
    this.ticking = this.tick().then((next) => {
      this.ticking = undefined;
      if (this.rerun) { this.rerun = false; next = 0; }
      this.arm(next);
    });
  }

  /** Claims and starts what is due; returns how long to wait before the next tick. */
  private async tick(): Promise<number> {
    const { sql, log } = this.opts;
    let next = this.pollMs;
    try {
      const room = MAX_IN_FLIGHT - this.inFlight.size;
      if (room > 0 && !this.stopped) {
        const claimed = await claimDue(sql, room, this.leaseMs);
        for (const c of claimed) this.track(this.attempt(c));
        if (claimed.length === room) return 0;
      }
      const due = await msUntilNextDue(sql);
      if (due !== null) next = Math.min(next, due);
    } catch (err) {
      if (!this.stopped) log.error({ err }, 'webhook dispatcher tick failed');
    }
    return next;
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  private async attempt(c: Claimed): Promise<void> {
    const { sql, log, timeScale } = this.opts;
    const out = await this.sender.send(c.url, c.secret, c.eventId, c.body);
    const gone = out.responseStatus === 410;
    const retryIn = out.ok || gone ? null : retryDelayMs(c.attempt, out.retryAfterS, timeScale);
    try {
      await recordAttempt(sql, c, out, retryIn, gone ? 'The receiver answered 410 Gone.' : undefined);
    } catch (err) {
      // Unrecorded: the lease runs out and the delivery is tried again (at least once).
      log.error({ err, event_id: c.eventId }, 'could not record a webhook attempt');
      return;
    }
    this.opts.onOutcome?.(out.ok ? 'delivered' : gone ? 'disabled' : retryIn === null ? 'failed' : 'retry');
    if (!out.ok) {
      log.info({ event_id: c.eventId, endpoint_id: c.endpointId, attempt: c.attempt, error: out.error }, 'webhook try failed');
    }
    if (retryIn !== null) this.arm(retryIn);
    // This try held one of the slots: when they were all taken, more may be waiting.
    if (this.inFlight.size >= MAX_IN_FLIGHT) this.arm(0);
  }
}
