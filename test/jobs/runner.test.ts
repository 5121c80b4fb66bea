// The job runner drains a backlog at the pace its jobs finish: a place freed while the last
// poll filled every place claims the next job at once, not at the next poll tick (a backlog
// left by an outage or a burst drained a few jobs per tick: minutes for a few hundred).
// Jobs committed claimed by the runner start without another claim.
import t from 'tap';
import type { Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dropSchema, PG_URL, storeModes, type Mode } from '../helpers/world.js';
import { openDb, type Sql } from '../../src/store/db.js';
import { createAccount } from '../../src/store/accounts.js';
import { newId } from '../../src/store/ids.js';
import { JobRunner } from '../../src/jobs/runner.js';
import { claimedRow, insertJobs, type NewJob } from '../../src/jobs/queue.js';
import { eventually } from '../helpers/until.js';

for (const mode of storeModes()) {
  t.test(`${mode}: a backlog of queued jobs drains without waiting for poll ticks`, async (t) => {
    const sql = await ownSql(t, mode);
    const { id: accountId } = await createAccount(sql, { name: 'Backlog', plan: 'lite' });
    const jobs: string[] = [];
    for (let i = 0; i < 12; i++) {
      const job: NewJob = { ...await queuedSource(sql, accountId), id: newId('job'), owner: null };
      await insertJobs(sql, [job]);
      jobs.push(job.id);
    }
    const handled: string[] = [];
    // Jobs that finish at once; the poll interval is an hour, so only the poll below runs.
    const runner = new JobRunner(sql, async (job) => {
      handled.push(job.id);
      await sql`update jobs set status = 'done' where id = ${job.id}`;
      return undefined;
    }, { capacity: 2, pollMs: 3_600_000, heartbeatMs: 3_600_000 });
    runner.start();
    t.teardown(() => runner.stop(1_000));
    await runner.poll();
    await eventually(async () => handled.length, jobs.length, 10_000);
    t.same([...handled].sort(), [...jobs].sort(), 'every queued job ran after one poll');
  });
}

// Jobs a process commits claimed by its runner start without a claim of their own; once the
// runner is stopping it hands them straight back, so that another process takes them at once
// instead of after their first lease.
for (const mode of storeModes()) {
  t.test(`${mode}: jobs inserted claimed start as they are; a stopping runner hands them back`, async (t) => {
    const sql = await ownSql(t, mode);
    const { id: accountId } = await createAccount(sql, { name: 'Claimed', plan: 'lite' });
    const seen: Array<{ id: string; attempts: number; placed?: true }> = [];
    const runner = new JobRunner(sql, async (job) => {
      seen.push({ id: job.id, attempts: job.attempts, placed: job.placed });
      await sql`update jobs set status = 'done' where id = ${job.id}`;
      return undefined;
    }, { capacity: 2, pollMs: 3_600_000, heartbeatMs: 3_600_000 });
    const insertClaimed = async (): Promise<NewJob> => {
      const job: NewJob = { ...await queuedSource(sql, accountId), id: newId('job'), owner: runner.owner };
      await insertJobs(sql, [job]);
      return job;
    };
    const first = await insertClaimed();
    await Promise.all(await runner.runClaimed([claimedRow(first)]));
    t.same(seen, [{ id: first.id, attempts: 1, placed: true }], 'started from the row as inserted, its source known placed');
    const [row] = await sql`select status, attempts from jobs where id = ${first.id}`;
    t.same({ ...row }, { status: 'done', attempts: 1 }, 'no second claim counted an attempt');

    const late = await insertClaimed();
    await runner.stop(1_000);
    t.same(await runner.runClaimed([claimedRow(late)]), [], 'a stopping runner starts nothing');
    const [back] = await sql`select status, lease_owner, attempts from jobs where id = ${late.id}`;
    t.same({ ...back }, { status: 'queued', lease_owner: null, attempts: 0 }, 'handed back for any runner');
    t.same(seen.map((s) => s.id), [first.id], 'the late job did not run here');
  });
}

/** A database of the test's own (a schema in Postgres, or an embedded one), gone at its end. */
async function ownSql(t: Test, mode: Mode): Promise<Sql> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-runner-'));
  const db = await openDb(mode === 'postgres' ? { databaseUrl: PG_URL, schema, dataDir } : { dataDir });
  t.teardown(async () => {
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
    if (mode === 'postgres') await dropSchema(schema);
  });
  return db.sql;
}

/** A queued conversion with one HTML source, for a job to run. */
async function queuedSource(sql: Sql, accountId: string): Promise<{ conversionId: string; sourceId: string; accountId: string }> {
  const conversionId = newId('conv');
  const sourceId = newId('file');
  await sql`insert into conversions (id, account_id, name, operation, status, created_at)
            values (${conversionId}, ${accountId}, 'html', 'parse', 'queued', now())`;
  await sql`insert into files (id, conversion_id, account_id, position, role, name, mime, bytes)
            values (${sourceId}, ${conversionId}, ${accountId}, 0, 'source', 'a.html', 'text/html', 1)`;
  return { conversionId, sourceId, accountId };
}
