import t from 'tap';
import type { Test } from 'tap';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { deletePrefix, dropSchema, PG_URL, REDIS_URL } from '../helpers/world.js';
import { openDb } from '../../src/store/db.js';
import { createAccount, createKey, SCOPES } from '../../src/store/accounts.js';
import { grantCredits } from '../../src/billing/ledger.js';
import { buildScanPdf } from '../fixtures/build/pdf.js';
import { SOURCE_ENTRY, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/** A docpipe process from its sources, with `env` (the test's store and settings). */
function startServer(env: Record<string, string>): Promise<ServerProcess> {
  return startServerProcess(SOURCE_ENTRY, env, 30_000);
}

async function setup(t: Test) {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const prefix = `test:takeover:${randomBytes(4).toString('hex')}:`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-takeover-'));
  const db = await openDb({ databaseUrl: PG_URL, schema, dataDir });
  const account = await createAccount(db.sql, { name: 'takeover', plan: 'pro' });
  const { key } = await createKey(db.sql, account.id, SCOPES);
  await grantCredits(db.sql, account.id, 1000, 'test');
  const env = {
    DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema, REDIS_URL, REDIS_PREFIX: prefix, DATA_DIR: dataDir,
    PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', LOG_PRETTY: '0', POOL_THREADS: '1', JOB_LEASE_S: '2', SHUTDOWN_GRACE_S: '1',
  };
  const children: ChildProcess[] = [];
  t.teardown(async () => {
    for (const c of children) c.kill('SIGKILL');
    await db.close();
    await dropSchema(schema);
    const redis = new Redis(REDIS_URL);
    await deletePrefix(redis, prefix);
    redis.disconnect();
    rmSync(dataDir, { recursive: true, force: true });
  });

  return { db, account, key, env, children, dataDir };
}

async function submitSlow(port: number, key: string, dataDir: string): Promise<{ id: string; usage: { credits_reserved: number } }> {
  const pdf = await buildScanPdf(dataDir, 'scan.pdf');
  const fd = new FormData();
  fd.append('file', new Blob([readFileSync(pdf)]), 'scan.pdf');
  fd.append('ocr', 'true');
  const res = await fetch(`http://127.0.0.1:${port}/v1/convert/pdf?wait=0`, { method: 'POST', headers: { 'x-api-key': key }, body: fd });
  if (res.status !== 202) throw new Error(`expected 202, got ${res.status}`);
  return await res.json() as { id: string; usage: { credits_reserved: number } };
}

t.test('two processes on one database: the job of a killed process is finished by the other, charged once', async (t) => {
  const { db, account, key, env, children, dataDir } = await setup(t);
  const a = await startServer(env);
  children.push(a.child);
  // A slow job: a scanned page OCR'd several times over (ocr: true on a multi-page scan).
  const conv = await submitSlow(a.port, key, dataDir);

  // Wait until A holds the job, kill A mid-work, then start B. (Killed after B's start-up, A
  // could finish the job first on a fast moment of the machine: seen once in CI, attempts 1.)
  let owner = '';
  for (let i = 0; i < 200 && !owner.includes(`:${a.child.pid}:`); i++) {
    const [j] = await db.sql`select lease_owner from jobs where conversion_id = ${conv.id}`;
    owner = (j?.lease_owner as string | null) ?? '';
    await new Promise((r) => setTimeout(r, 25));
  }
  t.match(owner, `:${a.child.pid}:`, 'process A claimed the job');
  const killed = new Promise((r) => a.child.once('exit', r));
  a.child.kill('SIGKILL');
  await killed;
  const b = await startServer(env);
  children.push(b.child);

  let status = '';
  for (let i = 0; i < 600 && !['completed', 'failed', 'completed_with_errors'].includes(status); i++) {
    const r = await fetch(`http://127.0.0.1:${b.port}/v1/conversions/${conv.id}`, { headers: { 'x-api-key': key } });
    status = ((await r.json()) as { status: string }).status;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(status, 'completed', 'process B completed the conversion');
  const [job] = await db.sql`select status, attempts, lease_owner from jobs where conversion_id = ${conv.id}`;
  t.equal(job!.status, 'done');
  t.equal(job!.attempts, 2, 'claimed twice: by A, then by B');
  const rows = await db.sql`select kind, amount from ledger where conversion_id = ${conv.id} order by id`;
  t.same(rows.map((r) => r.kind), ['reserve', 'release', 'charge'], 'reserved once, settled once');
  const charge = rows.find((r) => r.kind === 'charge');
  t.equal(-Number(charge!.amount), conv.usage.credits_reserved, 'charged what the pages cost, once');
  const [sum] = await db.sql`select sum(amount)::int as n from ledger where account_id = ${account.id}`;
  t.equal(sum!.n, 1000 - conv.usage.credits_reserved, 'the balance moved by the charge alone');
});

t.test('SIGTERM hands back a job that cannot finish within the grace period', async (t) => {
  const { db, key, env, children, dataDir } = await setup(t);
  const a = await startServer({ ...env, SHUTDOWN_GRACE_S: '0' });
  children.push(a.child);
  const conv = await submitSlow(a.port, key, dataDir);
  for (let i = 0; i < 200; i++) {
    const [j] = await db.sql`select status from jobs where conversion_id = ${conv.id}`;
    if (j?.status === 'running') break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const exited = new Promise<number | null>((r) => a.child.once('exit', (code) => r(code)));
  a.child.kill('SIGTERM');
  t.equal(await exited, 0, 'the process exits cleanly');
  const [job] = await db.sql`select status, lease_owner from jobs where conversion_id = ${conv.id}`;
  t.equal(job!.status, 'queued', 'the job is back in the queue');
  t.equal(job!.lease_owner, null, 'with no owner, for any process to take at once');
  const b = await startServer(env);
  children.push(b.child);
  let status = '';
  for (let i = 0; i < 600 && status !== 'completed'; i++) {
    const r = await fetch(`http://127.0.0.1:${b.port}/v1/conversions/${conv.id}`, { headers: { 'x-api-key': key } });
    status = ((await r.json()) as { status: string }).status;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(status, 'completed', 'another process finished it');
});
