// The durable job table: claim with SKIP LOCKED, renew leases, finish exactly once, hand back.
// A job's outcome is recorded only by the process that still holds its lease, so a job that was
// taken over after its first process stalled cannot be finished twice.
// Every query here has a deadline (`answered`): a query that never settles (seen on a connection
// cut under load) would otherwise hold a runner's poll or one of its places for good, and the
// queue would stop. What a late query does after its deadline is safe: a claim nobody started
// expires with its lease and is claimed again.
import { answered, atOnce, type Sql } from '../store/db.js';
import type { ConversionStatus, StartedSource } from '../store/conversions.js';

export interface JobRow {
  id: string;
  conversion_id: string;
  source_id: string;
  account_id: string;
  attempts: number;
  /** Set (not stored) on the jobs a process inserted claimed and starts itself: it placed their
   *  sources' blobs before starting them (jobs/persist.ts), so none is still in pending/. */
  placed?: true;
  /** Set (not stored) on the same jobs: their source and conversion as admission stored them
   *  (marked running in that insert), so the runner need not read them back. */
  started?: StartedSource;
}

/** Seconds a claim lasts without renewal (JOB_LEASE_S, for tests and tuning). */
export const LEASE_S = Number(process.env.JOB_LEASE_S) || 30;
/** After this many claims a job that keeps killing its process is failed instead. */
export const MAX_ATTEMPTS = 3;

/** A job as its conversion's transaction inserts it. */
export interface NewJob {
  id: string;
  conversionId: string;
  sourceId: string;
  accountId: string;
  /** The runner that starts it as soon as the transaction commits, which holds it from the
   *  insert (a first lease of LEASE_S, one attempt); null leaves it queued for any runner. */
  owner: string | null;
}

/**
 * Inserts jobs, each queued or already claimed by its owner. A job its process starts at once is
 * born claimed: claiming it after the commit cost every document a statement and a commit of its
 * own. Its lease runs from the database's clock, as every other lease does.
 */
export function insertJobs(t: Sql, jobs: NewJob[]) {
  return t`insert into jobs (id, conversion_id, source_id, account_id, status, lease_owner, attempts, lease_until)
    select id, c, s, a, case when o is null then 'queued' else 'running' end, o, case when o is null then 0 else 1 end,
      case when o is null then null else now() + make_interval(secs => ${LEASE_S}) end
    from (select unnest(${t.array(jobs.map((j) => j.id))}::text[]) as id, unnest(${t.array(jobs.map((j) => j.conversionId))}::text[]) as c,
      unnest(${t.array(jobs.map((j) => j.sourceId))}::text[]) as s, unnest(${t.array(jobs.map((j) => j.accountId))}::text[]) as a,
      unnest(${t.array(jobs.map((j) => j.owner))}::text[]) as o) as j`;
}

/** The row a runner starts from, of a job inserted claimed. */
export function claimedRow(j: NewJob, started?: StartedSource): JobRow {
  return { id: j.id, conversion_id: j.conversionId, source_id: j.sourceId, account_id: j.accountId, attempts: 1, ...(started ? { started } : {}) };
}

/** Claims up to `limit` queued jobs, or running ones whose lease has expired, oldest first. */
export async function claimNext(sql: Sql, owner: string, limit: number): Promise<JobRow[]> {
  if (limit <= 0) return [];
  return await answered(sql`
    update jobs set status = 'running', lease_owner = ${owner}, attempts = attempts + 1,
      lease_until = now() + make_interval(secs => ${LEASE_S})
    where id in (
      select id from jobs
      where status = 'queued' or (status = 'running' and lease_until < now())
      order by created_at limit ${limit} for update skip locked)
    returning id, conversion_id, source_id, account_id, attempts`) as unknown as JobRow[];
}

/** Renews this owner's leases; returns the ids it still holds (a deleted job drops out). */
export async function renew(sql: Sql, owner: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await answered(sql`
    update jobs set lease_until = now() + make_interval(secs => ${LEASE_S})
    where id in ${sql(ids)} and lease_owner = ${owner} and status = 'running'
    returning id`);
  return new Set(rows.map((r) => r.id as string));
}

/** Marks a job done inside the caller's transaction; false when this owner no longer holds it.
 *  The owner stays on the row: it says who recorded the outcome (see recordedStatus). */
export function completeJob(tx: Sql, owner: string, id: string): Promise<boolean> {
  // Sent at once (execute), so that a statement the caller issues after this one runs after it.
  return tx`update jobs set status = 'done', lease_until = null
            where id = ${id} and lease_owner = ${owner} and status = 'running' returning id`.execute()
    .then((rows) => rows.length === 1);
}

/**
 * The conversion's status when this owner recorded the job's outcome, else null. A commit whose
 * answer was lost (the connection died with it) is told apart from one that never happened this
 * way: its retry finds the job already done, by this owner.
 */
export async function recordedStatus(sql: Sql, owner: string, id: string): Promise<ConversionStatus | null> {
  const [row] = await answered(sql`select c.status from jobs j join conversions c on c.id = j.conversion_id
                          where j.id = ${id} and j.status = 'done' and j.lease_owner = ${owner}`);
  return row ? row.status as ConversionStatus : null;
}

/** Gives back this owner's running jobs so another process can take them at once. */
export async function handBack(sql: Sql, owner: string, ids?: string[]): Promise<number> {
  const rows = await answered(ids
    ? sql`update jobs set status = 'queued', lease_owner = null, lease_until = null, attempts = greatest(attempts - 1, 0)
          where lease_owner = ${owner} and status = 'running' and id in ${sql(ids.length ? ids : [''])} returning id`
    : sql`update jobs set status = 'queued', lease_owner = null, lease_until = null, attempts = greatest(attempts - 1, 0)
          where lease_owner = ${owner} and status = 'running' returning id`);
  return rows.length;
}

/**
 * Writes a running job's progress. Its commit does not wait for the disk (asynchronous commit):
 * progress only informs, a crash of the database that loses it leaves the job's earlier figures,
 * and every write that waits for the disk costs the others committing meanwhile, the renders of
 * the cheap path among them, a turn of Postgres's WAL flush (under scenario E, progress writes
 * were about a sixth of the backends seen waiting in `WALSync`).
 */
export async function setProgress(sql: Sql, owner: string, id: string, done: number, total: number): Promise<void> {
  await answered(atOnce(sql, (t) => [
    t`update jobs set progress_done = ${done}, progress_total = ${total} where id = ${id} and lease_owner = ${owner}`.execute(),
  ], { waitForDisk: false }));
}
