// The job runner drains a backlog at the pace its jobs finish: a place freed while the last
// poll filled every place claims the next job at once, not at the next poll tick (a backlog
// left by an outage or a burst drained a few jobs per tick: minutes for a few hundred).
// Jobs committed claimed by the runner start without another claim.
import t from 'tap';
import { insertOnePdf, ownStore, storeModes } from '../helpers/world.js';
import { createAccount } from '../../src/store/accounts.js';
import { newId } from '../../src/store/ids.js';
import { JobRunner } from '../../src/jobs/runner.js';
import { claimedRow, insertJobs, type NewJob } from '../../src/jobs/queue.js';
import { eventually } from '../helpers/until.js';

for (const mode of storeModes()) {
  t.test(`${mode}: a backlog of queued jobs drains without waiting for poll ticks`, async (t) => {
    const { sql } = await ownStore(t, 'runner', 10, mode);
    const { id: accountId } = await createAccount(sql, { name: 'Backlog', plan: 'lite' });
    const jobs: string[] = [];
    for (let i = 0; i < 12; i++) {
      const { id: conversionId, sourceId } = await insertOnePdf(sql, accountId, 'queued');
      const job: NewJob = { id: newId('job'), conversionId, sourceId, accountId, owner: null };
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
    const { sql } = await ownStore(t, 'runner', 10, mode);
    const { id: accountId } = await createAccount(sql, { name: 'Claimed', plan: 'lite' });
    const seen: Array<{ id: string; attempts: number; placed?: true }> = [];
    const runner = new JobRunner(sql, async (job) => {
      seen.push({ id: job.id, attempts: job.attempts, placed: job.placed });
      await sql`update jobs set status = 'done' where id = ${job.id}`;
      return undefined;
    }, { capacity: 2, pollMs: 3_600_000, heartbeatMs: 3_600_000 });
    const insertClaimed = async (): Promise<NewJob> => {
      const { id: conversionId, sourceId } = await insertOnePdf(sql, accountId, 'queued');
      const job: NewJob = { id: newId('job'), conversionId, sourceId, accountId, owner: runner.owner };
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
