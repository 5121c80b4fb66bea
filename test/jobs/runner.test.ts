// The job runner drains a backlog at the pace its jobs finish: a place freed while the last
// poll filled every place claims the next job at once, not at the next poll tick (a backlog
// left by an outage or a burst drained a few jobs per tick: minutes for a few hundred).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dropSchema, PG_URL, storeModes } from '../helpers/world.js';
import { openDb } from '../../src/store/db.js';
import { createAccount } from '../../src/store/accounts.js';
import { newId } from '../../src/store/ids.js';
import { JobRunner } from '../../src/jobs/runner.js';
import { eventually } from '../helpers/until.js';

for (const mode of storeModes()) {
  t.test(`${mode}: a backlog of queued jobs drains without waiting for poll ticks`, async (t) => {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-runner-'));
    const db = await openDb(mode === 'postgres' ? { databaseUrl: PG_URL, schema, dataDir } : { dataDir });
    t.teardown(async () => {
      await db.close();
      rmSync(dataDir, { recursive: true, force: true });
      if (mode === 'postgres') await dropSchema(schema);
    });
    const sql = db.sql;
    const { id: accountId } = await createAccount(sql, { name: 'Backlog', plan: 'lite' });
    const jobs: string[] = [];
    for (let i = 0; i < 12; i++) {
      const conv = newId('conv');
      const file = newId('file');
      const job = newId('job');
      await sql`insert into conversions (id, account_id, name, operation, status, created_at)
                values (${conv}, ${accountId}, 'html', 'parse', 'queued', now())`;
      await sql`insert into files (id, conversion_id, account_id, position, role, name, mime, bytes)
                values (${file}, ${conv}, ${accountId}, 0, 'source', 'a.html', 'text/html', 1)`;
      await sql`insert into jobs (id, conversion_id, source_id, account_id) values (${job}, ${conv}, ${file}, ${accountId})`;
      jobs.push(job);
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
