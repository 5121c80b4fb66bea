// The converter without the API: the same corpus converted by the same converter called directly,
// in this process — in one thread (InlineExecutor: the converter function on this event loop),
// and on the pool module with the server's thread count (PoolExecutor, as src/server/app.ts makes
// it) at the API's concurrency. What the API path costs on top of the conversion is the
// difference between these and the same documents through POST /v1/convert/{kind}. Both load
// the server's compiled code (dist/src, the build the bench's server runs), not the sources
// through this process's tsx, so that the two sides run the same JavaScript.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Executor } from '../../src/jobs/executor.js';
import { buildServer, ROOT } from '../docpipe.js';
import { defaultFormats } from '../../src/converters/registry.js';
import type { ConverterKind, ConvertOptions } from '../../src/converters/types.js';
import { runAll, type PassRate } from '../load.js';
import type { CorpusFile } from '../corpus.js';

export interface InThreadResult {
  rate: number;
  units: number;
  seconds: number;
  passes: number;
  failures: number;
  threads: number;
  /** The warm-up pass before the measured ones (see ApiResult.warm). */
  warm?: PassRate;
}

/** The executors of the compiled server (built first if it is not current). */
async function compiled(): Promise<{ InlineExecutor: typeof import('../../src/jobs/executor.js').InlineExecutor; PoolExecutor: typeof import('../../src/pool/pool.js').PoolExecutor }> {
  buildServer();
  const load = (file: string) => import(pathToFileURL(path.join(ROOT, 'dist', 'src', file)).href);
  const [executor, pool] = await Promise.all([
    load('jobs/executor.js') as Promise<typeof import('../../src/jobs/executor.js')>,
    load('pool/pool.js') as Promise<typeof import('../../src/pool/pool.js')>,
  ]);
  return { InlineExecutor: executor.InlineExecutor, PoolExecutor: pool.PoolExecutor };
}

/** Whole passes over the corpus until `minSeconds` is filled (the rule of the other baselines). */
async function measure(exec: Executor, kind: ConverterKind, files: readonly CorpusFile[], options: ConvertOptions,
  opts: { minSeconds: number; concurrency: number; unit: (f: CorpusFile) => number; warmup: number; warmSeconds?: number }): Promise<Omit<InThreadResult, 'threads' | 'rate'>> {
  const never = new AbortController().signal;
  const one = (f: CorpusFile) => exec.run({ kind, path: f.path, name: f.name, options }, never);
  let warm: InThreadResult['warm'];
  if (opts.warmup > 0) {
    let done = 0;
    const slice = files.slice(0, opts.warmup);
    const took = await runAll(slice, opts.concurrency, async (f) => { await one(f).then(() => { done += opts.unit(f); }, () => {}); });
    warm = { rate: done / took, documents: slice.length, seconds: took };
    // Then unmeasured passes until `warmSeconds` from the start, as the API's (throughput.ts).
    for (let spent = took; spent < (opts.warmSeconds ?? 0);) {
      spent += await runAll(files, opts.concurrency, async (f) => { await one(f).catch(() => {}); });
    }
  }
  let units = 0;
  let failures = 0;
  let seconds = 0;
  let passes = 0;
  do {
    seconds += await runAll(files, opts.concurrency, async (f) => {
      try {
        await one(f);
        units += opts.unit(f);
      } catch {
        failures++;
      }
    });
    passes++;
  } while (seconds < opts.minSeconds);
  return { units, seconds, passes, failures, warm };
}

/** The converter in this thread, one document at a time. */
export async function inThreadRate(kind: ConverterKind, files: readonly CorpusFile[], fields: Record<string, string>,
  opts: { minSeconds: number; unit: (f: CorpusFile) => number; warmup: number; warmSeconds?: number }): Promise<InThreadResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-bench-inthread-'));
  const exec = new (await compiled()).InlineExecutor({ tmpDir: dir, allowPrivateNetwork: false });
  try {
    const r = await measure(exec, kind, files, { formats: defaultFormats(kind), ...fields }, { ...opts, concurrency: 1 });
    return { ...r, rate: r.units / r.seconds, threads: 1 };
  } finally {
    await exec.close?.();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The converter on the pool module with `threads` threads, `concurrency` documents in flight. */
export async function poolRate(kind: ConverterKind, files: readonly CorpusFile[], fields: Record<string, string>,
  opts: { threads: number; concurrency: number; minSeconds: number; unit: (f: CorpusFile) => number; warmup: number; warmSeconds?: number }): Promise<InThreadResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-bench-pool-'));
  const exec = new (await compiled()).PoolExecutor({ tmpDir: dir, allowPrivateNetwork: false }, { threads: opts.threads });
  try {
    const r = await measure(exec, kind, files, { formats: defaultFormats(kind), ...fields }, opts);
    return { ...r, rate: r.units / r.seconds, threads: opts.threads };
  } finally {
    await exec.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
