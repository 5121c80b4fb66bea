// `npm run bench [-- A C …] [--quick] [--no-install] [--results DIR] [--markdown]`: installs
// the baselines' Debian packages if missing, sets docpipe up on the machine's Postgres and Redis,
// runs each scenario (warm-up first), prints one table, and writes the raw numbers to
// <results>/<timestamp>.json and the chart of this run to <results>/latest.svg.
// --quick runs every scenario for about a second on tiny corpora, without warm-ups and on one
// shared server process (the smoke test uses it: its figures are not meant to be read);
// --no-install skips what a missing Debian tool would measure instead of installing it;
// --markdown also prints the table as Markdown (for the README's Benchmarks section).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureDebian } from './debian.js';
import { databaseTransport, setUpBench, POOL_THREADS, ROOT } from './docpipe.js';
import { SCENARIOS } from './scenarios/index.js';
import { cpuShares, machineCpu } from './proc.js';
import { markdownTable, svgChart, textTable } from './report.js';
import type { Row } from './types.js';

export interface BenchOptions {
  /** Scenario ids (A–G) or titles; all when empty. */
  only?: string[];
  quick?: boolean;
  install?: boolean;
  resultsDir?: string;
  log?: (line: string) => void;
}

export interface BenchRun {
  rows: Row[];
  table: string;
  markdown: string;
  jsonFile: string;
  svgFile: string;
  errors: Record<string, string>;
  /** 1-minute load averages before the first and after the last scenario (the latter counts the
   *  bench's own work); before the run, anything above ~0 is other processes on the CPUs. */
  load: { start: number; end: number; cores: number };
}

export async function runBench(opts: BenchOptions = {}): Promise<BenchRun> {
  const log = opts.log ?? ((line: string) => console.error(line));
  const started = new Date();
  const loadStart = os.loadavg();
  const wanted = (opts.only ?? []).map((s) => s.toLowerCase());
  const scenarios = SCENARIOS.filter((s) => wanted.length === 0
    || wanted.includes(s.id.toLowerCase()) || wanted.includes(s.title.toLowerCase()));
  if (scenarios.length === 0) throw new Error(`no scenario matches ${wanted.join(', ')}; have ${SCENARIOS.map((s) => s.id).join(', ')}`);

  const tools = await ensureDebian({ install: opts.install ?? true, log });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-bench-corpus-'));
  const bench = await setUpBench({ reuse: opts.quick ?? false });
  // Ctrl-C: still stop the servers and drop the schema and Redis keys
  const onSignal = (): void => {
    void bench.close().finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.once('SIGINT', onSignal);
  const rows: Row[] = [];
  const raw: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  try {
    for (const s of scenarios) {
      log(`— scenario ${s.id} (${s.title})`);
      const t0 = performance.now();
      const cpu0 = machineCpu();
      try {
        const r = await s.run({ quick: opts.quick ?? false, tools, bench, dir, log });
        rows.push(...r.rows);
        // What the machine did meanwhile: a figure taken while the host took the CPUs away
        // (steal) or the disk held every commit back (iowait) reads lower than the code is.
        const cpu = cpuShares(cpu0, machineCpu());
        raw[s.id] = { ...r.raw, seconds: (performance.now() - t0) / 1000, machine_cpu: cpu };
        if (cpu) log(`${s.id}: the machine's CPUs meanwhile ${pct(cpu.busy)} busy, ${pct(cpu.idle)} idle, `
          + `${pct(cpu.iowait)} waiting for the disk, ${pct(cpu.steal)} taken by the host (steal)`);
      } catch (err) {
        // A scenario that breaks is a failed row, not a lost run.
        const message = (err as Error).stack ?? String(err);
        errors[s.id] = message;
        log(`scenario ${s.id} failed: ${message}`);
        rows.push({ scenario: `${s.id} ${s.title}`, check: 'ran', docpipe: null, baseline: null, ratio: null,
          target: 'completes', score: 0, pass: false, note: (err as Error).message.split('\n')[0] });
      }
    }
  } finally {
    process.off('SIGINT', onSignal);
    await bench.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const resultsDir = opts.resultsDir ?? path.join(ROOT, 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  const stamp = started.toISOString().replace(/[:.]/g, '-');
  const machine = {
    cpus: os.availableParallelism(), cpu_model: os.cpus()[0]?.model ?? '', mem_gib: Math.round(os.totalmem() / 2 ** 30),
    node: process.version, platform: `${process.platform}-${process.arch}`, loadavg_at_start: loadStart,
    postgres: databaseTransport(),
  };
  const loadEnd = os.loadavg();
  const jsonFile = path.join(resultsDir, `${stamp}.json`);
  writeFileSync(jsonFile, JSON.stringify({
    started_at: started.toISOString(), finished_at: new Date().toISOString(), quick: opts.quick ?? false,
    generator: 'bench/load.ts (undici Pool, closed/open loop, 1 % log histogram)', pool_threads: POOL_THREADS,
    machine: { ...machine, loadavg_at_end: loadEnd }, tools, rows, raw, errors,
  }, null, 2) + '\n');
  const svgFile = path.join(resultsDir, 'latest.svg');
  writeFileSync(svgFile, svgChart(rows, {
    title: `docpipe bench — ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC${opts.quick ? ' (quick)' : ''}`,
    subtitle: `${machine.cpus} cores, ${machine.cpu_model.trim()}, Node ${process.version}, POOL_THREADS=${POOL_THREADS}, `
      + `Postgres over ${machine.postgres}, load average before the run ${loadStart[0]!.toFixed(1)}`,
  }));
  return { rows, table: textTable(rows), markdown: markdownTable(rows), jsonFile, svgFile, errors,
    load: { start: loadStart[0]!, end: loadEnd[0]!, cores: machine.cpus } };
}

function pct(share: number): string {
  return `${(share * 100).toFixed(1)} %`;
}

function parseArgs(argv: string[]): BenchOptions & { markdown?: boolean } {
  const o: BenchOptions & { markdown?: boolean } = { only: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') o.quick = true;
    else if (a === '--no-install') o.install = false;
    else if (a === '--markdown') o.markdown = true;
    else if (a === '--results') o.resultsDir = path.resolve(argv[++i] ?? '');
    else if (a.startsWith('--')) throw new Error(`unknown option ${a}`);
    else o.only!.push(a);
  }
  return o;
}

if (process.argv[1] && pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url) {
  const opts = parseArgs(process.argv.slice(2));
  const run = await runBench(opts);
  console.log(`\n${run.table}\n`);
  if (opts.markdown) console.log(`${run.markdown}\n`);
  const { start, cores } = run.load;
  console.log(`Postgres reached over ${databaseTransport()}`);
  console.log(`load average before the run: ${start.toFixed(1)} on ${cores} cores`
    + (start > 1 ? ' (other processes were using the CPUs: figures are lower and noisier than on an idle machine)' : ''));
  console.log(`raw numbers: ${path.relative(process.cwd(), run.jsonFile)}\nchart: ${path.relative(process.cwd(), run.svgFile)}`);
  process.exit(Object.keys(run.errors).length ? 1 : 0);
}
