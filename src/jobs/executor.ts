// Where conversions run. The server hands an Executor a task naming a file on disk; the
// executor returns the outputs. InlineExecutor runs in this thread; the worker pool
// (src/pool) implements the same interface across threads.
import { converterFor, isRender, peekFile, renderInMemory, runConversion, type RunResult } from '../converters/registry.js';
import type { ConvertOptions, ConverterKind, Count, Peek } from '../converters/types.js';
import { rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

export interface Task {
  kind: ConverterKind;
  /** The file to convert; empty when `data` holds the bytes. */
  path: string;
  /** A render source's bytes held in memory (in-thread runs of render kinds only). */
  data?: Buffer;
  name: string;
  mime?: string;
  options: ConvertOptions;
  /** The file's first bytes when the caller read them already (in-thread runs only). */
  peek?: Peek;
  /** Where a pool thread writes each output (by index) of over `over` bytes, and says so in
   *  RunResult.staged: the caller's blob store would otherwise write it from its event loop, a
   *  trip through libuv's threads for each of open, write and close. In-thread runs ignore it. */
  stage?: { paths: string[]; over: number };
}

export interface ExecutorSettings {
  tmpDir: string;
  allowPrivateNetwork: boolean;
  ai?: { baseUrl: string; apiKey?: string; model: string };
}

export interface Executor {
  /** True when its conversions run with a vision model (ExecutorSettings.ai): what options
   *  that want one (`image_mode: understand`) are priced by. */
  readonly vision?: boolean;
  run(task: Task, signal: AbortSignal, onProgress?: (done: number, total: number) => void): Promise<RunResult>;
  /** The source's size in priced units (Converter.count), counted where conversions run: the
   *  parsers behind a count (mupdf, sharp) never load on the event loop of a pool's server.
   *  Without it the count runs in this thread. */
  count?(task: Task): Promise<Count>;
  /** Tasks waiting for a thread (0 when work starts at once). */
  queued(): number;
  /** True when the queue is past its high-water mark: new work should wait in the job table. */
  saturated?(): boolean;
  /** Calls `listener` after anything that may have changed `queued()` or `saturated()`: a task
   *  queued, started or ended. An executor that can be saturated reports here: the acceptor
   *  threads' copy of its state is written from these calls (AcceptorHub.follow). */
  onChange?(listener: () => void): void;
  close(): Promise<void>;
}

export async function runTask(task: Task, peek: Peek, settings: ExecutorSettings, signal: AbortSignal,
  onProgress: (done: number, total: number) => void, watchChild?: (pid: number) => () => void, scratch?: string): Promise<RunResult> {
  const run = (tmpDir: string): Promise<RunResult> => runConversion(task.kind, task.path, peek, task.options, {
    signal, tmpDir, progress: onProgress, allowPrivateNetwork: settings.allowPrivateNetwork, ai: settings.ai, watchChild,
  });
  // A pool thread hands over the folder it named for the task, and removes it. Markdown renders
  // read their one file and write nothing: no scratch directory on the cheap path. Every other
  // conversion gets its own name, made a folder only by a converter that writes there.
  if (scratch !== undefined) return run(scratch);
  if (isRender(task.kind)) return run(settings.tmpDir);
  const own = path.join(settings.tmpDir, `task_${randomBytes(6).toString('hex')}`);
  try {
    return await run(own);
  } finally {
    await rm(own, { recursive: true, force: true });
  }
}

/** A converter's count of the task's file. */
export async function countTask(task: Task): Promise<Count> {
  return (await converterFor(task.kind)).count(task.path, task.options);
}

export class InlineExecutor implements Executor {
  private running = 0;
  readonly vision: boolean;
  constructor(private settings: ExecutorSettings) {
    this.vision = settings.ai !== undefined;
  }

  async run(task: Task, signal: AbortSignal, onProgress: (done: number, total: number) => void = () => {}): Promise<RunResult> {
    this.running++;
    try {
      if (task.data) return renderInMemory(task.kind, task.data, task.options);
      const peek = task.peek ?? await peekFile(task.path, task.name, task.mime);
      return await runTask(task, peek, this.settings, signal, onProgress);
    } finally {
      this.running--;
    }
  }

  count(task: Task): Promise<Count> {
    return countTask(task);
  }

  queued(): number {
    return 0;
  }

  async close(): Promise<void> {}
}
