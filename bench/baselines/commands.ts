// Native baselines: a Debian command run once per corpus file, one process per core at a time
// (`mutool draw -F txt`, `pandoc -f docx -t gfm`, `tesseract … -`), output discarded. The corpus
// is run whole, as many passes as it takes to fill `minSeconds`, so the mix of documents is the
// one docpipe converts.
import { spawn } from 'node:child_process';
import os from 'node:os';
import { runAll } from '../load.js';
import type { CorpusFile } from '../corpus.js';

export interface CommandResult {
  /** Units (pages, images, documents) per second over the measured passes. */
  rate: number;
  units: number;
  seconds: number;
  passes: number;
  failures: number;
  processes: number;
}

function runOnce(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'ignore'], env: env ?? process.env });
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
  });
}

export async function runCommandBaseline(files: readonly CorpusFile[], argsFor: (f: CorpusFile) => [string, string[]],
  opts: { minSeconds: number; unit: (f: CorpusFile) => number; env?: NodeJS.ProcessEnv; processes?: number; warmup?: boolean }): Promise<CommandResult> {
  const processes = opts.processes ?? os.availableParallelism();
  // warm-up: the page cache and the binaries' own start-up files
  if (opts.warmup !== false) await runAll(files.slice(0, processes), processes, async (f) => { const [c, a] = argsFor(f); await runOnce(c, a, opts.env); });
  let units = 0;
  let failures = 0;
  let seconds = 0;
  let passes = 0;
  do {
    seconds += await runAll(files, processes, async (f) => {
      const [c, a] = argsFor(f);
      if (await runOnce(c, a, opts.env)) units += opts.unit(f);
      else failures++;
    });
    passes++;
  } while (seconds < opts.minSeconds);
  return { rate: units / seconds, units, seconds, passes, failures, processes };
}

/** Two runs of one baseline, before and after docpipe's: pooled (units ÷ seconds), so drift in
 *  the machine's other load over the scenario weighs on both sides alike. */
export function pooled<T extends { units?: number; images?: number; seconds: number; rate: number }>(before: T, after: T | null)
  : T & { rate: number; runs: number[] } {
  if (!after) return { ...before, runs: [before.rate] };
  const units = (before.units ?? before.images ?? 0) + (after.units ?? after.images ?? 0);
  const seconds = before.seconds + after.seconds;
  return { ...before, rate: units / seconds, seconds, runs: [before.rate, after.rate] };
}

/** "before 190 / after 508 pages/s", for a row's note. */
export function spread(runs: number[], unit: string): string {
  return runs.length > 1 ? `baseline before ${runs[0]!.toFixed(1)} / after ${runs[1]!.toFixed(1)} ${unit}` : '';
}
