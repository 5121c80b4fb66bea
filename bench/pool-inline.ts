// `npm run bench:pool [-- --kind word|image --files N --rounds N --threads N --heaps 1024,default
// --nice N]`: the cost of one conversion in this thread (InlineExecutor) against the same
// conversion on a pool thread (PoolExecutor: one pool per heap limit in --heaps, `default` being
// the pool's own; threads at the pool's nice increment unless --nice says otherwise), one task at
// a time, over the documents scenario D (word: .docx reports) or C (image: scans, OCR) converts.
// The variants run interleaved, one pass each per round in a rotating order, so that other work
// on a shared machine lands on all of them alike; the table shows medians over the rounds.
// Besides wall time per document it shows, from /proc/self/task/*/schedstat, the CPU time all
// threads of this process spent per document (V8's GC helper threads included) and the time
// threads spent runnable but waiting for a CPU: a variant that does more work shows in the first,
// one that loses the CPU to other processes in the second.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { InlineExecutor, type Executor, type ExecutorSettings } from '../src/jobs/executor.js';
import { PoolExecutor } from '../src/pool/pool.js';
import { WORKER_NICE_INCREMENT } from '../src/pool/worker.js';
import { scanImages, wordFiles, type CorpusFile } from './corpus.js';
import { threadSched, type Sched } from './proc.js';

/** The documents of each kind (as the bench scenarios make them) and a check of one result. */
const KINDS = {
  word: { files: (dir: string, n: number) => wordFiles(dir, n, 8), defaultFiles: 20, expect: /^# Report \d+/ },
  image: { files: (dir: string, n: number) => scanImages(dir, n, 10), defaultFiles: 4, expect: /\w+ \w+ \w+/ },
} as const;
type Kind = keyof typeof KINDS;

interface Args { kind: Kind; files?: number; rounds: number; threads: number; heaps: Array<number | undefined>; nice?: number }

const USAGE = 'usage: npm run bench:pool -- [--kind word|image] [--files N] [--rounds N] [--threads N] [--heaps 1024,default] [--nice N]';

function parseArgs(argv: string[]): Args {
  const a: Args = { kind: 'word', rounds: 7, threads: 2, heaps: [1024, undefined] };
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i]!;
    const value = argv[i + 1] ?? '';
    if (flag === '--kind') {
      if (!(value in KINDS)) throw new Error(`${USAGE}; got --kind ${value}`);
      a.kind = value as Kind;
      continue;
    }
    if (flag === '--heaps') {
      a.heaps = value.split(',').map((h) => (h === 'default' ? undefined : Number(h)));
      if (a.heaps.some((h) => h !== undefined && !(Number.isInteger(h) && h > 0))) throw new Error(`${USAGE}; got --heaps ${value}`);
      continue;
    }
    const m = /^--(files|rounds|threads|nice)$/.exec(flag);
    const v = Number(value);
    if (!m || !Number.isInteger(v) || v < (flag === '--nice' ? 0 : 1)) throw new Error(`${USAGE}; got ${flag} ${value}`);
    a[m[1] as 'files' | 'rounds' | 'threads' | 'nice'] = v;
  }
  return a;
}

/** CPU time and run-queue wait of every thread of this process, nanoseconds (schedstat). */
function schedTotals(): Sched {
  let cpu = 0;
  let wait = 0;
  for (const s of threadSched('self').values()) {
    cpu += s.cpu;
    wait += s.wait;
  }
  return { cpu, wait };
}

interface Sample { wallMs: number; cpuMs: number; waitMs: number }

async function pass(exec: Executor, kind: Kind, files: readonly CorpusFile[]): Promise<Sample> {
  const never = new AbortController().signal;
  const s0 = schedTotals();
  const t0 = performance.now();
  for (const f of files) {
    const r = await exec.run({ kind, path: f.path, name: f.name, options: { formats: ['markdown'] } }, never);
    if (!KINDS[kind].expect.test(r.outputs[0]?.content ?? '')) throw new Error(`${f.name}: no Markdown came back`);
  }
  const wall = performance.now() - t0;
  const s1 = schedTotals();
  const n = files.length;
  return { wallMs: wall / n, cpuMs: (s1.cpu - s0.cpu) / 1e6 / n, waitMs: (s1.wait - s0.wait) / 1e6 / n };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const args = parseArgs(process.argv.slice(2));
const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-bench-pool-'));
const settings: ExecutorSettings = { tmpDir: dir, allowPrivateNetwork: false };
const variants: Array<{ name: string; exec: Executor }> = [{ name: 'inline', exec: new InlineExecutor(settings) }];
for (const heapMb of args.heaps) {
  const exec = new PoolExecutor(settings, { threads: args.threads, heapMb, nice: args.nice });
  variants.push({ name: `pool ×${args.threads}, heap ${exec.heapMb} MB${heapMb === undefined ? ' (default)' : ''}`, exec });
}
try {
  const files = await KINDS[args.kind].files(path.join(dir, args.kind), args.files ?? KINDS[args.kind].defaultFiles);
  // warm-up: every pool thread loads the converter and runs the code path a few times
  for (const v of variants) for (let k = 0; k < args.threads * 2; k++) await pass(v.exec, args.kind, files.slice(0, 3));
  const samples = new Map<string, Sample[]>(variants.map((v) => [v.name, []]));
  for (let r = 0; r < args.rounds; r++) {
    for (let k = 0; k < variants.length; k++) {
      const v = variants[(r + k) % variants.length]!;
      samples.get(v.name)!.push(await pass(v.exec, args.kind, files));
    }
    console.error(`round ${r + 1}/${args.rounds} done`);
  }
  const base = median(samples.get('inline')!.map((s) => s.wallMs));
  console.table(variants.map((v) => {
    const s = samples.get(v.name)!;
    const wall = median(s.map((x) => x.wallMs));
    return {
      variant: v.name,
      'wall ms/doc': +wall.toFixed(1),
      'vs inline': `${(wall / base).toFixed(2)}×`,
      'cpu ms/doc (all threads)': +median(s.map((x) => x.cpuMs)).toFixed(1),
      'run-queue wait ms/doc': +median(s.map((x) => x.waitMs)).toFixed(1),
      'wall min–max': `${Math.min(...s.map((x) => x.wallMs)).toFixed(1)}–${Math.max(...s.map((x) => x.wallMs)).toFixed(1)}`,
    };
  }));
  console.log(`${args.kind}: ${files.length} files × ${args.rounds} rounds, one task at a time; pool threads at nice +${args.nice ?? `${WORKER_NICE_INCREMENT} (the pool's default)`}; load average now ${os.loadavg()[0]!.toFixed(2)} on ${os.availableParallelism()} cores`);
} finally {
  for (const v of variants) await v.exec.close();
  rmSync(dir, { recursive: true, force: true });
}
