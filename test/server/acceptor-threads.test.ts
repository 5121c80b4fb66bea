// Several acceptor threads in one process (HTTP_THREADS): connections spread over the threads,
// and what is per process keeps its meaning — a rate limit is per account whichever thread
// counts it, progress streams and webhooks work from any thread, /metrics answers for the
// process, and a stopping server answers (or hands back) the requests every thread holds.
import { SOURCE_ENTRY, startServerProcess } from '../helpers/server-process.js';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { openDb } from '../../src/store/db.js';
import { createAccount, createKey, SCOPES } from '../../src/store/accounts.js';
import { dropSchema, HeldExecutor, PG_URL, startWorld, type World } from '../helpers/world.js';
import { startReceiver } from '../webhooks/receiver.js';
import { eventually } from '../helpers/until.js';
import { requestsByAcceptor } from '../../src/server/metrics.js';

interface Answer { status: number; headers: http.IncomingHttpHeaders; body: string }

/** One request on a connection of its own (no keep-alive pool): the kernel picks the thread. */
function fresh(w: World, method: string, path: string, opts: { json?: unknown; key?: string } = {}): Promise<Answer> {
  const body = opts.json === undefined ? undefined : JSON.stringify(opts.json);
  return new Promise((resolve, reject) => {
    const req = http.request(`${w.url}${path}`, {
      method, agent: false,
      headers: { ...(body ? { 'content-type': 'application/json' } : {}), 'x-api-key': opts.key ?? w.key, connection: 'close' },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Requests each acceptor has served, from the process's /metrics. */
async function byAcceptor(w: World): Promise<Map<number, number>> {
  return requestsByAcceptor((await fresh(w, 'GET', '/metrics')).body);
}

/** Sends /healthz on fresh connections until two different acceptors have served (the kernel
 *  hashes each connection to a thread: 40 connections all on one of two threads would take
 *  odds of one in 2^39). */
async function spread(w: World): Promise<Map<number, number>> {
  for (let i = 0; i < 40; i++) {
    await fresh(w, 'GET', '/healthz');
    const seen = await byAcceptor(w);
    if ([...seen.values()].filter((n) => n > 0).length >= 2) return seen;
  }
  return byAcceptor(w);
}

t.test('two connections are served by two acceptor threads of one process', async (t) => {
  const w = await startWorld('postgres', { HTTP_THREADS: '2' }, { redis: true });
  t.teardown(() => w.close());
  t.equal(w.app.acceptors, 2, 'the main thread and one acceptor thread');
  const seen = await spread(w);
  t.ok((seen.get(0) ?? 0) > 0, `the main thread served requests (${seen.get(0)})`);
  t.ok((seen.get(1) ?? 0) > 0, `the acceptor thread served requests (${seen.get(1)})`);
  // The same conversion is readable from either thread: both answer from the one database.
  const made = await fresh(w, 'POST', '/v1/convert/markdown/html', { json: { markdown: '# Spread' } });
  t.equal(made.status, 200);
  const id = (JSON.parse(made.body) as { id: string }).id;
  const reads = await Promise.all(Array.from({ length: 8 }, () => fresh(w, 'GET', `/v1/conversions/${id}`)));
  t.same(reads.map((r) => r.status), Array(8).fill(200));
  t.ok(reads.every((r) => r.body.includes('<h1>Spread</h1>')), 'every read carries the rendered output');
});

t.test('the embedded database keeps HTTP on the main thread', async (t) => {
  const w = await startWorld('embedded', { HTTP_THREADS: '2' });
  t.teardown(() => w.close());
  t.equal(w.app.acceptors, 1);
  t.equal((await fresh(w, 'GET', '/healthz')).status, 200);
});

for (const redis of [true, false]) {
  const gate = redis ? 'Redis gate' : 'in-process gate';
  t.test(`${gate}: a per-account rate limit is exact across threads`, async (t) => {
    const LIMIT = 12;
    const w = await startWorld('postgres', { HTTP_THREADS: '2', PLAN_OVERRIDES: JSON.stringify({ max: { requestsPerMinute: LIMIT } }) }, { redis, plan: 'max' });
    t.teardown(() => w.close());
    const all = await Promise.all(Array.from({ length: LIMIT + 1 }, (_, i) =>
      fresh(w, 'POST', '/v1/convert/markdown/html', { json: { markdown: `# ${i}` } })));
    const statuses = all.map((a) => a.status).sort();
    t.equal(statuses.filter((s) => s === 200).length, LIMIT, `${LIMIT} answered`);
    t.equal(statuses.filter((s) => s === 429).length, 1, 'exactly one refused');
    const refused = all.find((a) => a.status === 429)!;
    t.match(JSON.parse(refused.body), { error: 'rate_limited' });
    t.ok(Number(refused.headers['retry-after']) >= 1, 'with Retry-After');
    const seen = await byAcceptor(w);
    t.ok([...seen.values()].filter((n) => n > 0).length === 2, `the requests were served by both threads (${JSON.stringify([...seen])})`);
  });
}

t.test('progress streams, webhooks and /metrics work from any thread', async (t) => {
  const held = new HeldExecutor();
  const rx = await startReceiver();
  const w = await startWorld('postgres', { HTTP_THREADS: '2', ALLOW_PRIVATE_NETWORK: '1' }, { executor: held });
  t.teardown(async () => { await w.close(); await rx.close(); await held.close(); });
  const hook = await fresh(w, 'POST', '/v1/webhooks', { json: { url: rx.url, eventTypes: ['conversion.completed'] } });
  t.equal(hook.status, 201);
  await spread(w);

  // Conversions submitted on fresh connections: some through each thread, all run by the
  // process's one runner, each followed by a stream opened on another fresh connection.
  held.hold();
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const res = await fresh(w, 'POST', '/v1/convert/text?wait=0', { json: { texts: [`first ${i}`, `second ${i}`] } });
    t.equal(res.status, 202);
    ids.push((JSON.parse(res.body) as { id: string }).id);
  }
  const streams = ids.map((id) => fresh(w, 'GET', `/v1/conversions/${id}/events`));
  setTimeout(() => held.release(), 300);
  for (const [i, s] of (await Promise.all(streams)).entries()) {
    t.equal(s.status, 200);
    const events = [...s.body.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
    t.ok(events.includes('progress'), `stream ${i}: progress events`);
    t.equal(events.at(-1), 'done', `stream ${i}: ends with done`);
    const done = JSON.parse(/event: done\ndata: (.*)\n/.exec(s.body)![1]!) as { status: string; files: Array<{ role: string; status: string }> };
    t.equal(done.status, 'completed');
  }
  // One webhook per conversion, whichever thread enqueued it: the one dispatcher sent them.
  const got = await rx.waitFor(ids.length, 30_000);
  const delivered = new Set(got.map((r) => (JSON.parse(r.body) as { data: { object: { id: string } } }).data.object.id));
  t.same([...delivered].sort(), [...ids].sort(), 'every conversion\'s event was delivered');

  const metrics = (await fresh(w, 'GET', '/metrics')).body;
  const completed = /^docpipe_conversion_tasks_total\{kind="text",outcome="completed"\} (\d+)$/m.exec(metrics);
  t.equal(Number(completed?.[1]), ids.length * 2, 'the process\'s metrics count every source the runner converted');
  const answered = [...metrics.matchAll(/^docpipe_http_requests_total\{method="POST",route="\/v1\/convert\/text",status="202"\} (\d+)$/gm)];
  t.equal(answered.reduce((n, m) => n + Number(m[1]), 0), ids.length, 'and every submit, whichever thread answered it');
});

t.test('every thread answers 202 capacity as soon as the pool is full', async (t) => {
  // The acceptor threads read the pool's state from memory the main thread writes as the pool
  // changes: a submit on any thread right after the pool filled must not be queued behind it.
  const held = new HeldExecutor();
  const w = await startWorld('postgres', { HTTP_THREADS: '2' }, { executor: held });
  t.teardown(async () => { await w.close(); await held.close(); });
  await spread(w);
  // A plan whose concurrency takes the seventeen conversions (the queued ones hold theirs).
  const { key } = await w.newKey({ plan: 'max' });
  held.hold();
  const first = await fresh(w, 'POST', '/v1/convert/text?wait=0', { json: { text: 'holds the pool' }, key });
  t.equal(first.status, 202);
  t.equal(await eventually(async () => held.waitingTasks > 0, true, 30_000), true, 'its job holds the pool');
  const before = await byAcceptor(w);
  // Sixteen connections: both threads get some (all on one would take odds of one in 2^15).
  // A thread that missed the change would run the job and answer wait_timeout after 5 s.
  const answers = await Promise.all(Array.from({ length: 16 }, (_, i) =>
    fresh(w, 'POST', '/v1/convert/text?wait=5', { json: { text: `after the pool filled ${i}` }, key })));
  const after = await byAcceptor(w);
  const reasons = answers.map((a) => `${a.status} ${(JSON.parse(a.body) as { async_reason?: string }).async_reason}`);
  t.same(reasons, Array(16).fill('202 capacity'), 'every submit answered 202 capacity');
  // Between the two reads: the sixteen submits and the first read's own request.
  for (const thread of [0, 1]) {
    t.ok((after.get(thread) ?? 0) - (before.get(thread) ?? 0) >= 2, `acceptor ${thread} answered some of them`);
  }
  held.release();
});

t.test('a stopping server answers the waiting requests of every thread, or hands their work back', async (t) => {
  // Holds its tasks without reporting the pool full, so that every request waits.
  const held = Object.assign(new HeldExecutor(), { saturated: () => false });
  const w = await startWorld('postgres', { HTTP_THREADS: '2', POOL_THREADS: '8' }, { executor: held });
  t.teardown(async () => { await w.close(); await held.close(); });
  const before = await spread(w);
  t.ok([...before.values()].filter((n) => n > 0).length === 2, 'both threads are serving');
  // Sync requests on fresh connections (both threads get some) whose jobs are held past the
  // shutdown grace (2 s): they are waiting when the server stops.
  held.hold();
  const waiting = Array.from({ length: 8 }, (_, i) => fresh(w, 'POST', '/v1/convert/text?wait=60', { json: { text: `held ${i}` } }));
  t.equal(await eventually(async () => held.waitingTasks >= 8, true, 30_000), true, 'every job is running, held');
  const stopping = w.app.close();
  const answers = await Promise.all(waiting);
  await stopping;
  t.same(answers.map((a) => a.status), Array(8).fill(202), 'every waiting request was answered 202');
  const handedBack = answers.map((a) => JSON.parse(a.body) as { id: string; async_reason: string });
  for (const c of handedBack) t.equal(c.async_reason, 'wait_timeout', `${c.id}: with its reason`);
  // Their jobs are back in the table, for the next process to run.
  const ids = handedBack.map((c) => c.id);
  const jobs = await w.db.sql`select conversion_id, status, lease_owner from jobs where conversion_id = any(${ids})`;
  t.equal(jobs.length, ids.length, 'each conversion still has its job');
  t.ok(jobs.every((j) => j.status === 'queued' && j.lease_owner === null), 'queued again, held by no process');
});

t.test('SIGTERM to a server of two acceptor threads answers every waiting request, then exits 0', async (t) => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-sigterm-'));
  const db = await openDb({ databaseUrl: PG_URL, schema, dataDir });
  t.teardown(async () => { await db.close(); await dropSchema(schema); rmSync(dataDir, { recursive: true, force: true }); });
  const account = await createAccount(db.sql, { name: 'sigterm', plan: 'pro' });
  const { key } = await createKey(db.sql, account.id, SCOPES);
  const { child, port, exited } = await startServerProcess(SOURCE_ENTRY, {
    DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema, REDIS_URL: '', DATA_DIR: dataDir,
    LOG_LEVEL: 'info', HTTP_THREADS: '2', POOL_THREADS: '1', SHUTDOWN_GRACE_S: '1',
  });
  const w = { url: `http://127.0.0.1:${port}`, key } as World;
  await spread(w);
  // Markdown whose render is quadratic (runs of emphasis markers) goes to the pool as a job and
  // takes seconds there: with one converter thread, the requests wait.
  const slow = '_a'.repeat(60_000);
  const waiting = Array.from({ length: 6 }, () => fresh(w, 'POST', '/v1/convert/markdown/html?wait=60', { json: { markdown: slow } }));
  // Idle keep-alive connections on the threads too: a thread that ended with one still open
  // would abort the process (a uWS socket left on a closing thread loop).
  const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const idle = await Promise.all(Array.from({ length: 8 }, () => new Promise<number>((resolve, reject) => {
    http.get(`${w.url}/healthz`, { agent: keepAlive }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode!)); }).on('error', reject);
  })));
  t.ok(idle.every((s) => s === 200), 'eight keep-alive connections stay open, idle');
  t.teardown(() => keepAlive.destroy());
  const busy = async (): Promise<boolean> => /^docpipe_pool_threads_busy 1$/m.test((await fresh(w, 'GET', '/metrics')).body);
  t.equal(await eventually(busy, true, 30_000), true, 'the converter thread is rendering');
  child.kill('SIGTERM');
  const answers = await Promise.all(waiting);
  t.equal(await exited, 0, 'the process exits 0');
  t.ok(answers.every((a) => a.status === 202), `every waiting request was answered 202 (${answers.map((a) => a.status).join(' ')})`);
  const ids = answers.map((a) => (JSON.parse(a.body) as { id: string }).id);
  const jobs = await db.sql`select status, lease_owner from jobs where conversion_id = any(${ids})`;
  t.equal(jobs.length, 6, 'every conversion kept its job');
  t.ok(jobs.every((j) => j.status === 'queued' && j.lease_owner === null), 'handed back for the next process');
});
