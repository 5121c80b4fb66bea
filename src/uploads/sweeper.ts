// Retention (DESIGN.md §4): deletes conversions past expires_at (their rows and blobs) and
// uploads past expires_at (assembled file, parts, rows), leaving a tombstone per deleted id so a
// later reference answers 410 file_expired rather than 404.
//
// Safe in every process at once: each batch claims its rows with FOR UPDATE SKIP LOCKED inside
// one transaction, so two sweepers never pick the same row, and the blobs are unlinked before
// that transaction commits — a crash leaves the rows to sweep again, never orphaned blobs.
// DATA_DIR/tmp is swept too: entries untouched for an hour were left by a process that died.
// Never swept: stored conversions (store: true has no expires_at), conversions still queued
// or running (a job may be reading their sources), and an upload some request is assembling.
import { lstat, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Sql } from '../store/db.js';
import type { Blobs } from '../store/blobs.js';
import type { Logger } from '../log.js';

export interface SweepCounts {
  conversions: number;
  files: number;
  uploads: number;
  /** Entries of DATA_DIR/tmp left behind (a process killed mid-request or mid-conversion). */
  temp: number;
}

/** A temp entry untouched this long belongs to no live request or conversion: a request body is
 *  written to at least every idle timeout (10 s), and staged files are adopted or removed when
 *  their request ends; a conversion's scratch directory lives at most its task time limit. */
export const TEMP_MAX_AGE_MS = 60 * 60 * 1000;

export interface SweeperOptions {
  /** Seconds between sweeps; 0 disables the timer (sweepOnce still works). */
  intervalS: number;
  /** Rows per transaction. */
  batch?: number;
}

const TOMBSTONE_DAYS = 30;

export class Sweeper {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private stopped = false;
  private batch: number;

  constructor(private sql: Sql, private blobs: Blobs, private log: Logger, private opts: SweeperOptions) {
    this.batch = opts.batch ?? 100;
  }

  start(): void {
    if (this.opts.intervalS <= 0 || this.stopped) return;
    // Jitter spreads the sweeps of processes started together.
    const ms = this.opts.intervalS * 1000 * (0.75 + Math.random() / 2);
    this.timer = setTimeout(() => {
      this.running = this.sweepOnce()
        .catch((err) => this.log.warn({ err }, 'retention sweep failed'))
        .finally(() => { this.running = undefined; this.start(); });
    }, ms);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** Sweeps everything expired now, batch by batch. */
  async sweepOnce(): Promise<SweepCounts> {
    const total: SweepCounts = { conversions: 0, files: 0, uploads: 0, temp: 0 };
    for (;;) {
      const c = await this.conversionsBatch();
      total.conversions += c.conversions;
      total.files += c.files;
      if (c.conversions < this.batch || this.stopped) break;
    }
    for (;;) {
      const n = await this.uploadsBatch();
      total.uploads += n;
      if (n < this.batch || this.stopped) break;
    }
    await this.sql`delete from expired_refs where expired_at < now() - ${TOMBSTONE_DAYS} * interval '1 day'`;
    total.temp = await this.tempBatch();
    if (total.conversions || total.uploads || total.temp) this.log.info(total, 'retention sweep');
    return total;
  }

  private async conversionsBatch(): Promise<{ conversions: number; files: number }> {
    return this.sql.begin(async (tx) => {
      const t = tx as unknown as Sql;
      const doomed = await t`select id from conversions
        where expires_at <= now() and not store and status not in ('queued', 'running')
        order by expires_at limit ${this.batch} for update skip locked`;
      if (doomed.length === 0) return { conversions: 0, files: 0 };
      const ids = doomed.map((r) => r.id as string);
      const files = await t`delete from files where conversion_id in ${t(ids)} returning id, account_id, blob`;
      if (files.length) {
        await t`insert into expired_refs ${t(files.map((f) => ({ id: f.id as string, account_id: f.account_id as string })))}
                on conflict (id) do nothing`;
      }
      await t`delete from conversions where id in ${t(ids)}`;
      await this.blobs.remove(files.filter((f) => f.blob).map((f) => f.blob as string));
      return { conversions: ids.length, files: files.length };
    });
  }

  /** Removes what a killed process left in DATA_DIR/tmp (every process shares it: only entries
   *  older than TEMP_MAX_AGE_MS, which no live process still uses). */
  private async tempBatch(): Promise<number> {
    const cutoff = Date.now() - TEMP_MAX_AGE_MS;
    let removed = 0;
    for (const name of await readdir(this.blobs.tmpDir).catch(() => [] as string[])) {
      const p = path.join(this.blobs.tmpDir, name);
      const st = await lstat(p).catch(() => undefined);
      if (!st || st.mtimeMs >= cutoff) continue;
      await rm(p, { recursive: true, force: true });
      removed++;
    }
    return removed;
  }

  private async uploadsBatch(): Promise<number> {
    return this.sql.begin(async (tx) => {
      const t = tx as unknown as Sql;
      const doomed = await t`select id, account_id, blob from uploads
        where expires_at <= now() and (status <> 'completing' or coalesce(locked_until, '-infinity') < now())
        order by expires_at limit ${this.batch} for update skip locked`;
      if (doomed.length === 0) return 0;
      const ids = doomed.map((r) => r.id as string);
      await t`insert into expired_refs ${t(doomed.map((u) => ({ id: u.id as string, account_id: u.account_id as string })))}
              on conflict (id) do nothing`;
      await t`delete from uploads where id in ${t(ids)}`;
      for (const u of doomed) {
        if (u.blob) await this.blobs.remove([u.blob as string]);
        await rm(this.blobs.pathOf(`${u.account_id as string}/${u.id as string}.parts`), { recursive: true, force: true });
      }
      return ids.length;
    });
  }
}
