// The worker pool: real conversions on threads, progress, failures confined to their task,
// the time limit, the heap limit, cancellation, queue accounting, once-per-thread set-up, and
// TypeScript loading in threads under both ways the project starts.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ApiError } from '../../src/errors.js';
import { DEFAULT_HEAP_MB, DEFAULT_YOUNG_MB, PoolExecutor, type PoolTask } from '../../src/pool/pool.js';
import { WORKER_NICE_INCREMENT } from '../../src/pool/worker.js';
import { loadConfig } from '../../src/config.js';
import { buildReportPdf, REPORT } from '../fixtures/build/pdf.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pool-'));
const scratch = path.join(dir, 'scratch');
mkdirSync(scratch);
const settings = { tmpDir: scratch, allowPrivateNetwork: false };

let n = 0;
function doc(content: string): string {
  const file = path.join(dir, `doc-${++n}`);
  writeFileSync(file, content);
  return file;
}
function stub(name: string, content = '{}'): PoolTask {
  return { kind: 'text', path: doc(content), name: `${name}.json`, options: { formats: ['markdown'] }, testModule: path.join(here, 'fixtures', `${name}.ts`) };
}
const live = (): AbortSignal => new AbortController().signal;
const run = promisify(execFile);
const who = (content: string): { threadId: number; evaluations: number } => JSON.parse(content);

/** Threads boot slowly under tap (its loaders run in every thread too): run pairs of tasks until
 *  two different threads answer at once, and return their ids. */
async function bothThreads(p: PoolExecutor = pool): Promise<Set<number>> {
  for (let i = 0; i < 50; i++) {
    const pair = await Promise.all([0, 1].map(() => p.run(stub('counter', '{"sleepMs":100}'), live())));
    const ids = new Set(pair.map((r) => who(r.outputs[0]!.content).threadId));
    if (ids.size === 2) return ids;
  }
  return new Set();
}

// A time limit no conversion of these tests comes near, even a thread's first on a loaded
// machine (loading the converters under tap's loaders took over 1.5 s in a CI run); the time
// limit itself is tested on a pool of its own. Every progress step is forwarded (the default
// spacing of progress messages is tested on a pool of its own).
const pool = new PoolExecutor(settings, { threads: 2, taskTimeoutMs: 60_000, highWaterMark: 2, allowTestModules: true, progressEveryMs: 0 });
t.teardown(async () => {
  await pool.close();
  rmSync(dir, { recursive: true, force: true });
});

t.test('a text file converts on a thread into every format asked for, with its progress', async (t) => {
  const calls: Array<[number, number]> = [];
  const file = doc('Hello *pool*\r\n\r\n\r\nSecond line\n');
  const r = await pool.run({ kind: 'text', path: file, name: 'note.txt', options: { formats: ['markdown', 'text', 'html'] } },
    live(), (done, total) => calls.push([done, total]));
  t.same(r.outputs.map((o) => o.format), ['markdown', 'text', 'html']);
  t.equal(r.outputs[0]!.content, 'Hello *pool*\n\nSecond line\n');
  t.match(r.outputs[1]!.content, /Hello pool/);
  t.notMatch(r.outputs[1]!.content, /\*/);
  t.match(r.outputs[2]!.content, /<em>pool<\/em>/);
  t.equal(r.pageCount, 1);
  t.same(calls, [[1, 1]], 'the text converter\'s progress arrives before run() settles');
});

t.test('a Markdown file renders to HTML on a thread', async (t) => {
  const r = await pool.run({ kind: 'markdown-html', path: doc('# Title\n\n- apple\n- pear\n'), name: 'a.md', options: { formats: ['html'] } }, live());
  t.match(r.outputs[0]!.content, /<h1[^>]*>Title<\/h1>/);
  t.match(r.outputs[0]!.content, /<li>pear<\/li>/);
  t.notMatch(r.outputs[0]!.content, /# Title/);
});

t.test('progress reported in a thread reaches the caller in order', async (t) => {
  const calls: Array<[number, number]> = [];
  const r = await pool.run(stub('progress'), live(), (done, total) => calls.push([done, total]));
  t.equal(r.outputs[0]!.content, 'done');
  t.same(calls, [[1, 5], [2, 5], [3, 5], [4, 5], [5, 5]]);
});

t.test('progress steps closer together than progressEveryMs are not forwarded, the last one always is', async (t) => {
  const spaced = new PoolExecutor(settings, { threads: 1, taskTimeoutMs: 60_000, allowTestModules: true, progressEveryMs: 3_600_000 });
  t.teardown(() => spaced.close());
  const calls: Array<[number, number]> = [];
  const r = await spaced.run(stub('progress'), live(), (done, total) => calls.push([done, total]));
  t.equal(r.outputs[0]!.content, 'done');
  t.same(calls, [[5, 5]], 'the four steps within the hour after the start are dropped');
  const report = await buildReportPdf(dir);
  const pdf = await spaced.run({ kind: 'pdf', path: report, name: 'report.pdf', options: { formats: ['markdown'] } }, live(),
    (done, total) => calls.push([done, total]));
  t.equal(pdf.pageCount, 3, 'a document of three pages');
  t.match(pdf.outputs[0]!.content, REPORT.page2Sentence);
  t.same(calls.slice(1), [[pdf.pageCount, pdf.pageCount]], 'a real conversion\'s pages arrive as its last step alone');
});

t.test('a thread writes the outputs over the stage\'s size to the paths it was given, and says which', async (t) => {
  const text = `${'staged words '.repeat(300)}\n`;
  const task = (stage: { paths: string[]; over: number }): PoolTask =>
    ({ kind: 'text', path: doc(text), name: 'notes.txt', options: { formats: ['markdown', 'text'] }, stage });
  const dest = mkdtempSync(path.join(os.tmpdir(), 'docpipe-stage-'));
  t.teardown(() => rmSync(dest, { recursive: true, force: true }));
  const [md, txt] = [path.join(dest, 'out0'), path.join(dest, 'out1')];
  const big = await pool.run(task({ paths: [md, txt], over: 1000 }), live());
  t.same(big.staged, [0, 1], 'both outputs are over 1,000 bytes');
  t.equal(readFileSync(md, 'utf8'), big.outputs[0]!.content, 'the Markdown, as returned');
  t.equal(readFileSync(txt, 'utf8'), big.outputs[1]!.content, 'the text, as returned');
  rmSync(md);
  rmSync(txt);
  const small = await pool.run(task({ paths: [md, txt], over: 100_000 }), live());
  t.same(small.staged, [], 'none is over 100,000 bytes');
  t.same(readdirSync(dest), [], 'and nothing is written');
  await t.rejects(pool.run(task({ paths: [md, path.join(dest, 'missing', 'out1')], over: 1000 }), live()),
    { name: 'ApiError', code: 'conversion_unavailable' }, 'a write that fails fails the task');
  t.same(readdirSync(dest), [], 'and takes back what was written before it');
});

t.test('a converter that throws fails only its own task, with its own error', async (t) => {
  const [api, plain, fine] = await Promise.allSettled([
    pool.run(stub('throws', 'api'), live()),
    pool.run(stub('throws', 'plain'), live()),
    pool.run(stub('counter'), live()),
  ]);
  t.equal(api.status, 'rejected');
  const apiErr = (api as PromiseRejectedResult).reason as ApiError;
  t.ok(apiErr instanceof ApiError, 'an ApiError stays an ApiError across the thread boundary');
  t.equal(apiErr.code, 'input_format_mismatch');
  t.equal(apiErr.message, 'The stub does not take this document.');
  t.equal(plain.status, 'rejected');
  const plainErr = (plain as PromiseRejectedResult).reason as Error;
  t.notOk(plainErr instanceof ApiError);
  t.equal(plainErr.name, 'TypeError');
  t.equal(plainErr.message, 'The stub tripped over its own feet.');
  t.equal(fine.status, 'fulfilled');
});

t.test('a task that busy-loops fails at the time limit and its thread is replaced', async (t) => {
  const limited = new PoolExecutor(settings, { threads: 2, taskTimeoutMs: 1500, highWaterMark: 2, allowTestModules: true, progressEveryMs: 0 });
  t.teardown(() => limited.close());
  let hungThread = 0;
  const began = Date.now();
  await t.rejects(limited.run(stub('hang'), live(), (_done, total) => { hungThread = total; }),
    { name: 'ApiError', code: 'invalid_document', message: 'The conversion took longer than 1.5 s' });
  t.ok(Date.now() - began >= 1500, 'not before the limit');
  t.ok(hungThread > 0, 'the task did start on a thread');
  const threads = await bothThreads(limited);
  t.equal(threads.size, 2, 'two threads serve again');
  t.notOk(threads.has(hungThread), 'the hung thread is gone');
  t.equal(limited.busy(), 0);
});

t.test('aborting the caller\'s signal cancels a running task', async (t) => {
  const ac = new AbortController();
  await t.rejects(pool.run(stub('hang'), ac.signal, () => ac.abort()),
    { name: 'ApiError', code: 'invalid_document', message: 'The conversion was cancelled.' });
  const r = await pool.run(stub('progress'), live());
  t.equal(r.outputs[0]!.content, 'done', 'the pool keeps working');
});

t.test('queued() counts waiting tasks, saturated() turns on at the high-water mark', async (t) => {
  // Tasks held until the test releases them, on a pool whose time limit only a hang would reach.
  const held = new PoolExecutor(settings, { threads: 2, taskTimeoutMs: 600_000, highWaterMark: 2, allowTestModules: true });
  t.teardown(() => held.close());
  const release = path.join(dir, 'release-queued');
  t.equal((await bothThreads(held)).size, 2, 'both threads are up');
  // What a listener reads each time the pool says its state may have changed (the acceptors'
  // copy of it is written so): the last reading must always be the state.
  const seen: Array<[number, boolean]> = [];
  held.onChange(() => seen.push([held.queued(), held.saturated()]));
  const slow = () => held.run(stub('counter', JSON.stringify({ until: release })), live());
  const running = [slow(), slow()];
  for (let i = 0; i < 3000 && held.busy() < 2; i++) await sleep(20);
  t.equal(held.busy(), 2);
  t.equal(held.utilisation(), 1);
  t.equal(held.queued(), 0);
  t.notOk(held.saturated());
  const dropped = new AbortController();
  const waiting = [slow(), held.run(stub('counter'), dropped.signal)];
  for (let i = 0; i < 3000 && held.queued() < 2; i++) await sleep(10);
  t.equal(held.queued(), 2);
  t.ok(held.saturated());
  t.same(seen.at(-1), [2, true], 'the listener heard of the queue reaching the mark');
  dropped.abort();
  await t.rejects(waiting[1]!, { message: 'The conversion was cancelled.' }, 'a queued task can be dropped');
  t.equal(held.queued(), 1);
  t.notOk(held.saturated());
  t.same(seen.at(-1), [1, false], 'and of a queued task dropped');
  writeFileSync(release, '');
  await Promise.all([...running, waiting[0]!]);
  t.equal(held.queued(), 0);
  t.equal(held.busy(), 0);
  t.same(seen.at(-1), [0, false], 'and of the queue emptied as the threads finished');
});

t.test('set-up runs once per thread, not once per task', async (t) => {
  const results = await Promise.all(Array.from({ length: 8 }, () => pool.run(stub('counter', '{"sleepMs":50}'), live())));
  const seen = results.map((r) => who(r.outputs[0]!.content));
  t.same(seen.map((s) => s.evaluations), Array(8).fill(1), 'the module was evaluated once in each thread');
  const threads = new Set(seen.map((s) => s.threadId));
  t.ok(threads.size <= 2 && threads.size < seen.length, 'threads were reused across tasks');
});

t.test('a task that allocates without bound fails with the out-of-memory error and the pool keeps working', async (t) => {
  const small = new PoolExecutor(settings, { threads: 1, heapMb: 64, allowTestModules: true });
  t.teardown(() => small.close());
  await t.rejects(small.run(stub('hog'), live()),
    { name: 'ApiError', code: 'invalid_document', message: 'The conversion ran out of memory (heap limit 64 MB)' });
  const r = await small.run({ kind: 'text', path: doc('still here\n'), name: 'a.txt', options: { formats: ['markdown'] } }, live());
  t.equal(r.outputs[0]!.content, 'still here\n');
});

t.test('threads get a heap limit of at least 2048 MB by default, below which V8 grows their heap too little', async (t) => {
  t.ok(DEFAULT_HEAP_MB >= 2048, `the default is ${DEFAULT_HEAP_MB} MB`);
  t.equal(loadConfig({}).workerHeapMb, DEFAULT_HEAP_MB, 'WORKER_HEAP_MB defaults to the pool\'s default');
  t.equal(loadConfig({ WORKER_HEAP_MB: '3000' }).workerHeapMb, 3000);
  const r = await pool.run(stub('heap'), live());
  const { heapLimitMb } = JSON.parse(r.outputs[0]!.content) as { heapLimitMb: number };
  // V8's limit counts the young generation on top of the old generation's
  t.ok(heapLimitMb >= DEFAULT_HEAP_MB && heapLimitMb < DEFAULT_HEAP_MB + 256, `a thread's heap limit is ${heapLimitMb} MB`);
  const small = new PoolExecutor(settings, { threads: 1, heapMb: 300, allowTestModules: true });
  t.teardown(() => small.close());
  const s = JSON.parse((await small.run(stub('heap'), live())).outputs[0]!.content) as { heapLimitMb: number };
  t.ok(s.heapLimitMb >= 300 && s.heapLimitMb < 300 + 256, `with heapMb 300 it is ${s.heapLimitMb} MB`);
});

t.test('a pool refuses test modules unless it was built to allow them', async (t) => {
  const strict = new PoolExecutor(settings, { threads: 1 });
  t.teardown(() => strict.close());
  await t.rejects(strict.run(stub('counter'), live()), { message: 'This pool does not load test modules.' });
  const r = await strict.run({ kind: 'text', path: doc('plain\n'), name: 'a.txt', options: { formats: ['markdown'] } }, live());
  t.equal(r.outputs[0]!.content, 'plain\n');
});

t.test('a conversion that writes no scratch file makes no scratch folder; a URL fetch makes its folder and it is removed', async (t) => {
  const own = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pool-scratch-'));
  // A URL conversion fetches from this machine: the pool must allow private addresses.
  const urlPool = new PoolExecutor({ tmpDir: own, allowPrivateNetwork: true }, { threads: 1, taskTimeoutMs: 60_000 });
  const server = http.createServer((_req, res) => { res.writeHead(200, { 'content-type': 'text/plain' }); res.end('Fetched words about herons.\n'); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    server.close();
    await urlPool.close();
    rmSync(own, { recursive: true, force: true });
  });
  // Every name made in the pool's scratch root, as inotify reports it.
  const made: string[] = [];
  const marked = new Set<string>();
  const watcher = watch(own, (event, name) => {
    if (event !== 'rename' || !name) return;
    if (name.startsWith('mark-')) marked.add(name);
    else if (!made.includes(name)) made.push(name);
  });
  t.teardown(() => watcher.close());
  // inotify's events reach this event loop after the task's answer: wait for those of a marker
  // folder made after the task, so that every event of the task has been seen before it.
  let marks = 0;
  const settle = async (): Promise<void> => {
    const mark = `mark-${++marks}`;
    mkdirSync(path.join(own, mark));
    for (let i = 0; i < 200 && !marked.has(mark); i++) await sleep(25);
    rmSync(path.join(own, mark), { recursive: true });
  };

  const pdf = await buildReportPdf(dir, 'scratch-report.pdf');
  const r = await urlPool.run({ kind: 'pdf', path: pdf, name: 'report.pdf', options: { formats: ['markdown'] } }, live());
  t.match(r.outputs[0]!.content, REPORT.title, 'the PDF converted');
  await settle();
  t.same(made, [], 'no folder was made for it');

  const link = doc(`http://127.0.0.1:${(server.address() as AddressInfo).port}/herons.txt\n`);
  const u = await urlPool.run({ kind: 'url', path: link, name: 'herons.url', options: { formats: ['markdown'] } }, live());
  t.match(u.outputs[0]!.content, /Fetched words about herons/, 'the URL converted');
  await settle();
  t.equal(made.length, 1, 'the fetch made one folder');
  t.match(made[0], /^pool_/, 'named by the pool');
  t.same(readdirSync(own), [], 'and it was removed after the task');
});

t.test('scratch directories are removed, also for tasks whose thread was terminated', async (t) => {
  t.same(readdirSync(scratch), []);
});

t.test('threads load the TypeScript sources under the tsx CLI and under node --import=tsx', async (t) => {
  const file = doc('from a child *process*\n');
  const script = path.join(here, 'fixtures', 'run-once.ts');
  // The two children run at once: each is a process start, the test's whole cost.
  const ways = [
    [path.join(root, 'node_modules', '.bin', 'tsx'), [script, file]],
    [process.execPath, ['--import=tsx', script, file]],
  ] as const;
  const runs = await Promise.all(ways.map(([cmd, args]) => run(cmd, [...args], { cwd: root, timeout: 30_000 })));
  for (const [i, { stdout }] of runs.entries()) {
    const result = JSON.parse(stdout.trim().split('\n').pop()!) as { outputs: Array<{ content: string }> };
    t.equal(result.outputs[0]!.content, 'from a child *process*\n', path.basename(ways[i]![0]));
  }
});

/** Linux's scheduling policies as /proc/<tid>/stat gives them. */
const SCHED_OTHER = 0;
const SCHED_IDLE = 5;

/** Whether util-linux's chrt, which the threads set their policy with, is on this machine. */
async function hasChrt(): Promise<boolean> {
  return run('chrt', ['--version']).then(() => true, () => false);
}

interface Priority { thread: number; main: number; threadPolicy: number; mainPolicy: number }

t.test('converter threads run below the event loop: nice raised by 10 on Linux, the main thread untouched', async (t) => {
  if (process.platform !== 'linux') {
    t.comment('per-thread nice values and policies are a Linux feature');
    return;
  }
  const r = await pool.run(stub('nice'), live());
  const { thread, main, threadPolicy, mainPolicy } = JSON.parse(r.outputs[0]!.content) as Priority;
  t.equal(thread, Math.min(19, main + WORKER_NICE_INCREMENT), `the converter thread runs at nice ${thread}`);
  t.equal(main, os.getPriority(process.pid), 'the main thread keeps the process priority');
  t.ok(thread > main || main === 19, 'the converter thread yields to the main thread');
  t.equal(mainPolicy, SCHED_OTHER, 'the main thread keeps the normal policy');
  t.equal(threadPolicy, SCHED_OTHER, 'so does the converter thread, unless WORKER_SCHED_IDLE asks for SCHED_IDLE');
});

t.test('WORKER_NICE=0 keeps converter threads at the process priority; the setting is checked at start', async (t) => {
  t.throws(() => loadConfig({ WORKER_NICE: '20' }), /WORKER_NICE must be at most 19/);
  t.throws(() => loadConfig({ WORKER_NICE: '-1' }), /WORKER_NICE must be a non-negative integer/);
  t.equal(loadConfig({}).workerNice, WORKER_NICE_INCREMENT);
  if (process.platform !== 'linux') {
    t.comment('per-thread nice values are a Linux feature');
    return;
  }
  const flat = new PoolExecutor(settings, { threads: 1, taskTimeoutMs: 5000, allowTestModules: true, nice: 0 });
  t.teardown(() => flat.close());
  const r = await flat.run(stub('nice'), live());
  const { thread, main } = JSON.parse(r.outputs[0]!.content) as Priority;
  t.equal(thread, main, `the thread runs at the main thread's nice (${main})`);
});

t.test('WORKER_SCHED_IDLE=1 puts converter threads on SCHED_IDLE besides their nice; the setting is checked at start', async (t) => {
  t.equal(loadConfig({}).workerSchedIdle, false, 'off by default');
  t.equal(loadConfig({ WORKER_SCHED_IDLE: '1' }).workerSchedIdle, true);
  t.equal(loadConfig({ WORKER_SCHED_IDLE: '0' }).workerSchedIdle, false);
  t.throws(() => loadConfig({ WORKER_SCHED_IDLE: '2' }), /WORKER_SCHED_IDLE must be at most 1/);
  t.throws(() => loadConfig({ WORKER_SCHED_IDLE: 'yes' }), /WORKER_SCHED_IDLE must be a non-negative integer/);
  if (process.platform !== 'linux') {
    t.comment('per-thread policies are a Linux feature');
    return;
  }
  const idle = new PoolExecutor(settings, { threads: 1, taskTimeoutMs: 5000, allowTestModules: true, schedIdle: true });
  t.teardown(() => idle.close());
  const r = await idle.run(stub('nice'), live());
  const { thread, main, threadPolicy, mainPolicy } = JSON.parse(r.outputs[0]!.content) as Priority;
  if (await hasChrt()) t.equal(threadPolicy, SCHED_IDLE, 'the converter thread is on SCHED_IDLE');
  else t.equal(threadPolicy, SCHED_OTHER, 'without chrt the thread keeps the normal policy (its nice is its priority)');
  t.equal(thread, Math.min(19, main + WORKER_NICE_INCREMENT), 'at its nice increment, which stands where the policy cannot be set');
  t.equal(mainPolicy, SCHED_OTHER, 'the main thread keeps the normal policy');
});

t.test('threads get a young generation of DEFAULT_YOUNG_MB by default, WORKER_YOUNG_MB sets another', async (t) => {
  t.equal(loadConfig({}).workerYoungMb, DEFAULT_YOUNG_MB, 'WORKER_YOUNG_MB defaults to the pool\'s default');
  t.equal(loadConfig({ WORKER_YOUNG_MB: '96' }).workerYoungMb, 96);
  t.throws(() => loadConfig({ WORKER_YOUNG_MB: '0' }), /WORKER_YOUNG_MB must be a positive number/);
  // V8's heap limit is the old generation's plus the young generation's: with the old
  // generation fixed, the difference between two threads' limits is their young generations'
  const limit = async (youngMb: number): Promise<number> => {
    const p = new PoolExecutor(settings, { threads: 1, heapMb: 300, youngMb, allowTestModules: true });
    try {
      return (JSON.parse((await p.run(stub('heap'), live())).outputs[0]!.content) as { heapLimitMb: number }).heapLimitMb;
    } finally {
      await p.close();
    }
  };
  const [big, small] = [await limit(DEFAULT_YOUNG_MB), await limit(48)];
  t.ok(Math.abs(big - small - (DEFAULT_YOUNG_MB - 48)) <= 16, `limits ${big} and ${small} MB differ by the young generations' difference`);
});
