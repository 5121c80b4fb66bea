// Where conversions run. The server hands an Executor a task naming a file on disk; the
// executor returns the outputs. InlineExecutor runs in this thread; the worker pool
// (src/pool) implements the same interface across threads.
import { peekFile, runConversion, type RunResult } from '../converters/registry.js';
import type { ConvertOptions, ConverterKind, Peek } from '../converters/types.js';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';

export interface Task {
  kind: ConverterKind;
  path: string;
  name: string;
  mime?: string;
  options: ConvertOptions;
}

export interface ExecutorSettings {
  tmpDir: string;
  allowPrivateNetwork: boolean;
  ai?: { baseUrl: string; apiKey?: string; model: string };
}

export interface Executor {
  run(task: Task, signal: AbortSignal, onProgress?: (done: number, total: number) => void): Promise<RunResult>;
  /** Tasks waiting for a thread (0 when work starts at once). */
  queued(): number;
  /** True when the queue is past its high-water mark: new work should wait in the job table. */
  saturated?(): boolean;
  close(): Promise<void>;
}

export async function runTask(task: Task, peek: Peek, settings: ExecutorSettings, signal: AbortSignal,
  onProgress: (done: number, total: number) => void): Promise<RunResult> {
  const tmpDir = await mkdtemp(path.join(settings.tmpDir, 'task_'));
  try {
    return await runConversion(task.kind, task.path, peek, task.options, {
      signal, tmpDir, progress: onProgress, allowPrivateNetwork: settings.allowPrivateNetwork, ai: settings.ai,
    });
  } finally {
    await rm(tmpDir, { recursive: true, force: true });
  }
}

export class InlineExecutor implements Executor {
  private running = 0;
  constructor(private settings: ExecutorSettings) {}

  async run(task: Task, signal: AbortSignal, onProgress: (done: number, total: number) => void = () => {}): Promise<RunResult> {
    this.running++;
    try {
      const peek = await peekFile(task.path, task.name, task.mime);
      return await runTask(task, peek, this.settings, signal, onProgress);
    } finally {
      this.running--;
    }
  }

  queued(): number {
    return 0;
  }

  async close(): Promise<void> {}
}
