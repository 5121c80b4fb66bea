// The pool thread's entry (STYLE.md "Worker files"). piscina loads this module once per thread and
// calls its default export for every task, so module-scope state (the registry's loaded
// converters and their per-thread caches: mupdf, the tesseract worker) is set up once per thread.
// Under tsx the thread reaches this file through worker-tsx.mjs.
//
// Contract with pool.ts:
// - the request names the source by path; the thread reads the file itself;
// - `port` carries {type:'start'} first, then progress, then {type:'end'} before the reply, so
//   every progress message is delivered before the task settles; progress goes at most every
//   `progressEveryMs` (workerData) and always when a converter reports its last step: a message
//   wakes the event loop, and a converter reports every page;
// - the task's scratch folder (`settings.tmpDir`, named by the pool) is made by the converter that
//   writes there (converters/shared/scratch-dir.ts), if any, and removed here, in this thread:
//   {type:'end', cleaned} says whether it is gone, and the pool removes it when the thread could
//   not (terminated, or the removal failed);
// - failures come back as a reply, not a throw: structured clone would drop ApiError's code;
// - cancellation and the time limit terminate the thread (pool.ts), so the signal handed to the
//   converters here never fires.
import { isMainThread, threadId, workerData, type MessagePort } from 'node:worker_threads';
import { readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { getPriority, setPriority } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { serializeError as serialize, storageError, type SerializedError } from '../errors.js';
import { peekFileSync, type RunResult } from '../converters/registry.js';
import { countTask, runTask, type ExecutorSettings, type Task } from '../jobs/executor.js';
import type { Count } from '../converters/types.js';

export interface WorkerRequest {
  task: Task;
  /** `tmpDir` names a directory for this task alone, made and removed by the thread. */
  settings: ExecutorSettings;
  port: MessagePort;
  /** TEST ONLY: a module whose default export runs the task instead of the registry. Honoured
   *  only in a pool built with `allowTestModules: true`. */
  testModule?: string;
}

/** A count (Converter.count) of one file: no port, no progress, no scratch directory. */
export interface CountRequest {
  count: Task;
}

export type PortMessage =
  | { type: 'start'; threadId: number }
  | { type: 'progress'; done: number; total: number }
  /** A child process group the task started, and its end (ConvertContext.watchChild). */
  | { type: 'child'; pid: number }
  | { type: 'child-ended'; pid: number }
  /** `cleaned`: the task's scratch folder was removed. */
  | { type: 'end'; cleaned: boolean };


export type WorkerReply = { ok: true; result: RunResult } | { ok: false; error: SerializedError };

export type CountReply = { ok: true; count: Count } | { ok: false; error: SerializedError };

/** TEST ONLY: the shape of a module named by `testModule`. */
export type TestRunner = (task: Task, ctx: { signal: AbortSignal; progress(done: number, total: number): void }) => Promise<RunResult>;

/**
 * Converter threads run at a lower priority than the event loop (nice 10 above the process's):
 * on a machine whose cores the pool keeps busy, the thread that answers requests still gets the
 * CPU the moment it has work, so cheap requests and probes are not queued behind conversions.
 * Linux gives each thread its own nice value (setpriority on the thread id); threads this
 * thread starts (tesseract's) inherit it. Elsewhere, or if refused, threads keep the process's.
 *
 * A nice value only orders the threads of one scheduling group, though: with autogroups (one
 * group per session, Debian's default) or a service's cgroup, the process's threads together
 * share the cores with Postgres's and Redis's as one group. Under scenario E's flood a Postgres
 * backend woken to commit a cheap render waited up to 78 ms for a core the converter threads held
 * (`perf sched`); the probe's p99 was 23–55 ms in eight runs, 16–19 ms in three with autogroups
 * off. SCHED_IDLE is looked at before any group (a task woken on a core that runs an idle-policy
 * thread takes it at once), and with the option `schedIdle` (WORKER_SCHED_IDLE=1) the threads go
 * on it too, set with util-linux's `chrt` (Node.js has no call for sched_setscheduler; where that
 * fails the nice value stays their priority): E's probe 17–40 ms in six of seven runs, 101 in the
 * seventh. It is off by default because an idle-policy thread gets almost nothing while anything
 * else in its group wants the core: beside two busy loops of the same session the pool's tests
 * did not end in 140 s (35 s at nice 10), and TASK_TIMEOUT_S counts wall time, so a starved
 * conversion fails.
 */
export const WORKER_NICE_INCREMENT = 10;

/** Progress messages of a task at most this often, when the pool does not say (workerData). */
export const PROGRESS_MESSAGE_EVERY_MS = 200;

function progressEvery(): number {
  const ms = (workerData as { progressEveryMs?: number } | undefined)?.progressEveryMs;
  return typeof ms === 'number' && Number.isFinite(ms) && ms >= 0 ? ms : PROGRESS_MESSAGE_EVERY_MS;
}

/** The pool's `nice` option (config WORKER_NICE; 0 keeps the threads at the process's priority). */
function niceIncrement(): number {
  const n = (workerData as { nice?: number } | undefined)?.nice;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 19 ? n : WORKER_NICE_INCREMENT;
}

/** The pool's `schedIdle` option (config WORKER_SCHED_IDLE; off unless asked for). */
function schedIdle(): boolean {
  return (workerData as { schedIdle?: boolean } | undefined)?.schedIdle === true;
}

function yieldToEventLoop(): void {
  let tid: number;
  try {
    tid = Number(path.basename(readlinkSync('/proc/thread-self')));
  } catch {
    return; // not Linux: the thread runs at the process's priority
  }
  if (!Number.isSafeInteger(tid) || tid <= 0) return;
  try {
    const increment = niceIncrement();
    if (increment > 0) setPriority(tid, Math.min(19, niceOfProcess() + increment));
  } catch {
    // not allowed: the thread keeps the process's nice value
  }
  if (!schedIdle()) return;
  try {
    execFileSync('chrt', ['--idle', '--pid', '0', String(tid)], { stdio: 'ignore', timeout: 5_000 });
  } catch {
    // no chrt, or refused: the nice value above is the thread's priority
  }
}

function niceOfProcess(): number {
  try {
    return getPriority(process.pid);
  } catch {
    return 0;
  }
}

// Only in a pool thread: importing this module elsewhere (its types, a test) changes nothing.
if (!isMainThread) yieldToEventLoop();

const allowTestModules = (workerData as { allowTestModules?: boolean } | undefined)?.allowTestModules === true;
const quietSignal = new AbortController().signal;

async function runTestModule(file: string, task: Task, progress: (done: number, total: number) => void): Promise<RunResult> {
  if (!allowTestModules) throw new Error('This pool does not load test modules.');
  const run = (await import(pathToFileURL(file).href) as { default: TestRunner }).default;
  return run(task, { signal: quietSignal, progress });
}

export default async function handle(req: WorkerRequest | CountRequest): Promise<WorkerReply | CountReply> {
  if ('count' in req) {
    try {
      return { ok: true, count: await countTask(req.count) };
    } catch (err) {
      return { ok: false, error: serialize(err) };
    }
  }
  const { port, task } = req;
  const post = (m: PortMessage): void => port.postMessage(m);
  post({ type: 'start', threadId });
  const every = progressEvery();
  let posted = performance.now();
  const progress = (done: number, total: number): void => {
    const now = performance.now();
    if (done < total && now - posted < every) return;
    posted = now;
    post({ type: 'progress', done, total });
  };
  const watchChild = (pid: number): (() => void) => {
    post({ type: 'child', pid });
    return () => post({ type: 'child-ended', pid });
  };
  const scratch = req.settings.tmpDir;
  try {
    const result = req.testModule
      ? await runTestModule(req.testModule, task, progress)
      : await runTask(task, peekFileSync(task.path, task.name, task.mime), req.settings, quietSignal, progress, watchChild, scratch);
    if (task.stage) result.staged = stageOutputs(result, task.stage);
    return { ok: true, result };
  } catch (err) {
    return { ok: false, error: serialize(err) };
  } finally {
    post({ type: 'end', cleaned: removed(scratch) });
    port.close();
  }
}

/** Writes the outputs over `over` bytes to their paths (Task.stage); on a failure none is left. */
function stageOutputs(result: RunResult, stage: NonNullable<Task['stage']>): number[] {
  const written: number[] = [];
  try {
    result.outputs.forEach((o, k) => {
      const file = stage.paths[k];
      if (file === undefined || Buffer.byteLength(o.content) <= stage.over) return;
      written.push(k); // before the write: a write that fails part-way leaves a file too
      writeFileSync(file, o.content);
    });
  } catch (err) {
    for (const k of written) rmSync(stage.paths[k]!, { force: true });
    throw storageError(err, 'writing an output');
  }
  return written;
}

function removed(dir: string): boolean {
  try {
    rmSync(dir, { recursive: true, force: true });
    return true;
  } catch {
    return false;
  }
}
