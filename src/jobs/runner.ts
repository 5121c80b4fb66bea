// Runs durable jobs in this process: the ones it just accepted (inserted already claimed by it)
// and any queued or abandoned ones it finds while it has room (claimed by polling, SKIP LOCKED). It
// renews the leases of what it runs, notices jobs deleted under it, and on shutdown lets
// running work finish within a grace period before handing the rest back.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Sql } from '../store/db.js';
import { claimNext, handBack, renew, LEASE_S, type JobRow } from './queue.js';
import type { JobOutcome } from './context.js';

export type JobHandler = (job: JobRow, signal: AbortSignal) => Promise<JobOutcome | undefined>;

export interface RunnerOptions {
  /** Jobs this process runs at once (the pool's threads plus a small queue). */
  capacity: number;
  pollMs?: number;
  heartbeatMs?: number;
}

interface Running {
  job: JobRow;
  ctrl: AbortController;
  done: Promise<JobOutcome | undefined>;
}

export class JobRunner {
  readonly owner = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private running = new Map<string, Running>();
  private pollTimer?: NodeJS.Timeout;
  private beatTimer?: NodeJS.Timeout;
  private stopping = false;
  private polling = false;
  /** The last poll filled every free place: more jobs may be waiting. */
  private backlog = false;

  constructor(private sql: Sql, private handler: JobHandler, private opts: RunnerOptions) {}

  start(): void {
    this.pollTimer = setInterval(() => void this.poll(), this.opts.pollMs ?? 500);
    this.beatTimer = setInterval(() => void this.heartbeat(), this.opts.heartbeatMs ?? (LEASE_S * 1000) / 3);
    this.pollTimer.unref();
    this.beatTimer.unref();
  }

  /** Free places for more work in this process. */
  room(): number {
    return Math.max(0, this.opts.capacity - this.running.size);
  }

  claims(): boolean {
    return !this.stopping;
  }

  /** Starts jobs this process has just committed claimed by it; returns those it started. */
  async runClaimed(jobs: JobRow[]): Promise<Array<Promise<JobOutcome | undefined>>> {
    return (await this.startClaimed(jobs)).map((s) => s.done);
  }

  /** runClaimed, saying which job each promise is of. Once stopping, the jobs are handed back
   *  for another process at once, rather than waiting for their first lease to run out. */
  async startClaimed(jobs: JobRow[]): Promise<Array<{ id: string; done: Promise<JobOutcome | undefined> }>> {
    if (this.stopping) {
      await handBack(this.sql, this.owner, jobs.map((j) => j.id)).catch(() => 0);
      return [];
    }
    return jobs.map((j) => ({ id: j.id, done: this.start1({ ...j, placed: true }) }));
  }

  /** Aborts this process's running jobs of a conversion (it was deleted). */
  abortConversion(conversionId: string): void {
    for (const r of this.running.values()) if (r.job.conversion_id === conversionId) r.ctrl.abort();
  }

  private start1(job: JobRow): Promise<JobOutcome | undefined> {
    const ctrl = new AbortController();
    const done = this.handler(job, ctrl.signal)
      .catch(() => undefined)
      .finally(() => {
        this.running.delete(job.id);
        // A backlog drains at the pace jobs finish, not one poll interval per batch.
        if (this.backlog) void this.poll();
      });
    this.running.set(job.id, { job, ctrl, done });
    return done;
  }

  async poll(): Promise<void> {
    if (this.stopping || this.polling) return;
    const room = this.room();
    if (room === 0) return;
    this.polling = true;
    try {
      const jobs = await claimNext(this.sql, this.owner, room);
      this.backlog = jobs.length === room;
      for (const j of jobs) this.start1(j);
    } catch {
      // The database is away: try again at the next tick.
      this.backlog = false;
    } finally {
      this.polling = false;
    }
  }

  private async heartbeat(): Promise<void> {
    const ids = [...this.running.keys()];
    if (ids.length === 0) return;
    try {
      const held = await renew(this.sql, this.owner, ids);
      for (const id of ids) if (!held.has(id)) this.running.get(id)?.ctrl.abort();
    } catch {
      // Leases run for LEASE_S; a short database outage does not lose them.
    }
  }

  /** Stops claiming, waits up to `graceMs` for running jobs, aborts and hands back the rest. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    clearInterval(this.pollTimer);
    const all = Promise.all([...this.running.values()].map((r) => r.done));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise((r) => { timer = setTimeout(r, graceMs); })]);
    clearTimeout(timer);
    clearInterval(this.beatTimer);
    const left = [...this.running.keys()];
    if (left.length > 0) {
      await handBack(this.sql, this.owner, left).catch(() => 0);
      for (const r of this.running.values()) r.ctrl.abort();
    }
  }
}
