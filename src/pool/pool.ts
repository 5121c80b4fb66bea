// docpipe's worker pool (DESIGN.md §1): an Executor that runs each conversion on a piscina
// thread. Threads receive the task (a path, never the document's bytes) and load worker.ts once
// each. Every task has a wall-clock limit counted from the moment a thread picks it up, and every
// thread a heap limit; a task over either, or whose caller aborts, has its thread terminated
// (a busy loop cannot see an AbortSignal) and piscina starts a replacement.
// The server answers 202 `capacity` when `saturated()` at submit.
import os from 'node:os';
import path from 'node:path';
import { rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { ApiError, reviveError as revive } from '../errors.js';
import type { RunResult } from '../converters/registry.js';
import type { Executor, ExecutorSettings, Task } from '../jobs/executor.js';
import type { Count } from '../converters/types.js';
import type { CountReply, CountRequest, PortMessage, WorkerReply, WorkerRequest } from './worker.js';
import { scratchPrefix } from './scratch.js';
import { letThreadsSizeTheirYoungGeneration } from './young-generation.js';

export interface PoolOptions {
  /** POOL_THREADS; default: os.availableParallelism(). */
  threads?: number;
  /** Wall-clock limit of one task once it runs; default 120 s. */
  taskTimeoutMs?: number;
  /** Each thread's V8 old-generation heap limit; default DEFAULT_HEAP_MB. Buffers and WASM
   *  memory live outside it. */
  heapMb?: number;
  /** Each thread's V8 young-generation size; default DEFAULT_YOUNG_MB. */
  youngMb?: number;
  /** Nice increment of the converter threads over the process (Linux; 0 = none; default 10). */
  nice?: number;
  /** Converter threads also on SCHED_IDLE (Linux, where `chrt` is; default false). See worker.ts. */
  schedIdle?: boolean;
  /** Queue length at which `saturated()` turns true; default threads × 4. */
  highWaterMark?: number;
  /** Progress messages of a task at most this often (worker.ts PROGRESS_MESSAGE_EVERY_MS by default);
   *  the last step of a conversion always comes. */
  progressEveryMs?: number;
  /** TEST ONLY: honour `testModule` in tasks (see worker.ts). */
  allowTestModules?: boolean;
  /** Errors piscina reports outside any task (a thread failing to start); default: stderr. */
  onError?: (err: Error) => void;
}

/** TEST ONLY: a Task that names a module to run instead of the registry's converter. */
export interface PoolTask extends Task {
  testModule?: string;
}

/**
 * The default heap limit of a thread. Not only a ceiling: V8 sizes a heap's growth between full
 * collections by its limit. Below 2048 MB (on 64-bit builds without pointer compression, such as
 * Node's) it lets the old generation grow by at most 1.3–2× of what survived the last full
 * collection instead of 4×, and a thread converting document after document with a small live
 * heap runs a full collection for nearly every document: at 1024 MB a Word report took 2–3× the
 * CPU time it takes on the main thread (`npm run bench:pool`). From 2048 MB up a thread grows its
 * heap as the main thread does; the limit still stops a runaway document.
 */
export const DEFAULT_HEAP_MB = 2048;

/**
 * The default young generation of a thread (V8's default on 64-bit is 48 MB: two 16 MB
 * semi-spaces and as much again for large new objects). A conversion allocates a page's
 * characters, fragments and lines and keeps them until the page is done, and the sampled pages'
 * models until the document is: with V8's default, scavenges came often enough to promote much of
 * that, and the old generation's concurrent marking and compaction (V8's helper threads, on the
 * cores the other conversions need) followed. At 192 MB, PDFs at `standard` through the API took
 * 111–117 ms of CPU per document in all threads and processes against 120–143 at the default
 * (four runs each, alternating; `npm run bench:cpu`), for 140 MB more peak RSS with four
 * documents in flight (740 against 603 MB); at 96 MB the gain was within noise and at 256 MB no
 * larger while the peak passed 930 MB.
 */
export const DEFAULT_YOUNG_MB = 192;

// When this file runs from source under tsx, the thread must go through the tsx bootstrap.
const WORKER_FILE = import.meta.url.endsWith('.ts')
  ? new URL('./worker-tsx.mjs', import.meta.url)
  : new URL('./worker.js', import.meta.url);

export class PoolExecutor implements Executor {
  readonly threads: number;
  readonly taskTimeoutMs: number;
  readonly heapMb: number;
  readonly youngMb: number;
  readonly highWaterMark: number;
  readonly vision: boolean;
  private readonly pool: Piscina<WorkerRequest | CountRequest, WorkerReply | CountReply>;
  private readonly allowTestModules: boolean;
  private running = 0;
  private readonly listeners: Array<() => void> = [];
  private closing: Promise<void> | undefined;

  constructor(private settings: ExecutorSettings, opts: PoolOptions = {}) {
    this.threads = Math.max(1, opts.threads ?? os.availableParallelism());
    this.taskTimeoutMs = opts.taskTimeoutMs ?? 120_000;
    this.heapMb = opts.heapMb ?? DEFAULT_HEAP_MB;
    this.youngMb = opts.youngMb ?? DEFAULT_YOUNG_MB;
    this.highWaterMark = opts.highWaterMark ?? this.threads * 4;
    this.vision = settings.ai !== undefined;
    this.allowTestModules = opts.allowTestModules === true;
    // Else node's --max-semi-space-size, when the process has it, would size every thread's.
    letThreadsSizeTheirYoungGeneration();
    this.pool = new Piscina<WorkerRequest | CountRequest, WorkerReply | CountReply>({
      filename: WORKER_FILE.href,
      // A fixed set of threads: a terminated one is replaced at once, none idles out.
      minThreads: this.threads,
      maxThreads: this.threads,
      // One task per thread: terminating a thread must not take other tasks with it.
      concurrentTasksPerWorker: 1,
      // Between tasks the sync Atomics wait would freeze a thread's own async work (the
      // tesseract worker's messages); the saving is nothing next to a conversion.
      atomics: 'disabled',
      resourceLimits: { maxOldGenerationSizeMb: this.heapMb, maxYoungGenerationSizeMb: this.youngMb },
      workerData: { allowTestModules: this.allowTestModules, nice: opts.nice, schedIdle: opts.schedIdle, progressEveryMs: opts.progressEveryMs },
    });
    // Without a listener piscina's 'error' event would take the process down.
    this.pool.on('error', opts.onError ?? ((err: Error) => console.error('docpipe pool:', err)));
  }

  async run(task: PoolTask, signal: AbortSignal, onProgress: (done: number, total: number) => void = () => {}): Promise<RunResult> {
    if (task.testModule !== undefined && !this.allowTestModules) {
      throw new Error('This pool does not load test modules.');
    }
    if (signal.aborted) throw cancelled();
    // Named here, made and removed by the thread (worker.ts): from this loop each would be a
    // round trip through libuv's threads.
    const taskDir = `${scratchPrefix(this.settings.tmpDir)}${randomBytes(6).toString('hex')}`;
    let cleaned = false;
    const { port1, port2 } = new MessageChannel();
    const stop = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let started = false;
    /** Child process groups the task started and has not seen end (worker.ts watchChild). */
    const children = new Set<number>();
    let ended!: () => void;
    const endSeen = new Promise<void>((resolve) => { ended = resolve; });
    port1.on('message', (m: PortMessage) => {
      if (m.type === 'start') {
        started = true;
        this.running++;
        timer = setTimeout(() => { timedOut = true; stop.abort(); }, this.taskTimeoutMs);
      } else if (m.type === 'progress') {
        onProgress(m.done, m.total);
      } else if (m.type === 'child') {
        children.add(m.pid);
      } else if (m.type === 'child-ended') {
        children.delete(m.pid);
      } else {
        cleaned = m.cleaned;
        ended();
      }
    });
    port1.on('close', () => ended());
    const onAbort = (): void => stop.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const request: WorkerRequest = {
        task: stripTestModule(task), settings: { ...this.settings, tmpDir: taskDir }, port: port2, testModule: task.testModule,
      };
      let reply: WorkerReply;
      try {
        const ran = this.pool.run(request, { transferList: [port2], signal: stop.signal });
        this.changed();
        reply = await ran as WorkerReply;
      } catch (err) {
        throw this.failure(err, timedOut, signal.aborted);
      }
      await endSeen;
      if (!reply.ok) throw revive(reply.error);
      return reply.result;
    } finally {
      clearTimeout(timer);
      if (started) this.running--;
      this.changed();
      signal.removeEventListener('abort', onAbort);
      port1.close();
      // A terminated thread could not stop what it started (a LibreOffice run): its groups go here.
      killGroups(children);
      // A killed group may still be letting go of files in the folder for a moment.
      if (!cleaned || children.size > 0) await rm(taskDir, { recursive: true, force: true, maxRetries: children.size > 0 ? 5 : 0 });
    }
  }

  /**
   * Counts a source on a thread (admission's pricing), so the event loop never opens a document.
   * A count reads a page tree or a header, not pages: it has no time limit of its own beyond a
   * conversion's, and no progress.
   */
  async count(task: Task): Promise<Count> {
    const stop = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; stop.abort(); }, this.taskTimeoutMs);
    let reply: CountReply;
    try {
      const counted = this.pool.run({ count: stripTestModule(task) }, { signal: stop.signal });
      this.changed();
      reply = await counted as CountReply;
    } catch (err) {
      throw this.failure(err, timedOut, false);
    } finally {
      clearTimeout(timer);
      this.changed();
    }
    if (!reply.ok) throw revive(reply.error);
    return reply.count;
  }

  /** Tasks waiting for a thread. */
  queued(): number {
    return this.pool.queueSize;
  }

  /** Threads running a task now. */
  busy(): number {
    return this.running;
  }

  /** Busy threads as a share of all threads, 0–1. */
  utilisation(): number {
    return this.running / this.threads;
  }

  /** True when the queue has reached its high-water mark. */
  saturated(): boolean {
    return this.queued() >= this.highWaterMark;
  }

  /** Called after a task is queued and after one ends: a thread it freed takes the next at once.
   *  (A thread replaced after a crash takes from the queue later, unseen here.) */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }

  close(): Promise<void> {
    this.closing ??= this.pool.destroy();
    return this.closing;
  }

  private failure(err: unknown, timedOut: boolean, callerAborted: boolean): Error {
    if (timedOut) {
      return new ApiError('invalid_document', `The conversion took longer than ${+(this.taskTimeoutMs / 1000).toFixed(3)} s`);
    }
    if (callerAborted) return cancelled();
    const e = err as { code?: string; message?: string };
    if (e.code === 'ERR_WORKER_OUT_OF_MEMORY') {
      return new ApiError('invalid_document', `The conversion ran out of memory (heap limit ${this.heapMb} MB)`);
    }
    if (/^worker exited with code/.test(e.message ?? '')) {
      return new ApiError('invalid_document', `The conversion stopped unexpectedly (${e.message})`);
    }
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** Kills child process groups by their leader's pid; a group already gone is no error. */
function killGroups(pids: Iterable<number>): void {
  for (const pid of pids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // ended on its own meanwhile
    }
  }
}

function cancelled(): ApiError {
  return new ApiError('invalid_document', 'The conversion was cancelled.');
}

function stripTestModule(task: PoolTask): Task {
  const { testModule: _, ...rest } = task;
  return rest;
}

/** The error the thread threw, as the same class with the same code. */
