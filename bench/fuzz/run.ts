// The long fuzz run: a server of its own (embedded mode by default, or --mode postgres) on the
// worker pool, and as many mutated documents as asked, then one table and the findings.
//
//   npx tsx bench/fuzz/run.ts --count 5000                 # cases 0…4999 of the default base seed
//   npx tsx bench/fuzz/run.ts --base 20240601 --first 137 --count 1   # replays one case
//
// Options: --base N (seed base, default 20240601, the test suite's), --first N, --count N,
// --parallel N (requests in flight, default 4), --threads N (pool threads, default 2),
// --limit-s N (the pool's per-task time limit, default 30), --mode embedded|postgres.
// Exits 1 when there is a finding. Case i is mutated from seed base + i: the same case on
// every machine.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startWorld, type Mode } from '../../test/helpers/world.js';
import { PoolExecutor } from '../../src/pool/pool.js';
import { buildCorpus } from '../../test/fixtures/build/fuzz.js';
import { runCases, table, UNLIMITED_RATE } from './harness.js';

const { values } = parseArgs({
  options: {
    base: { type: 'string', default: '20240601' },
    first: { type: 'string', default: '0' },
    count: { type: 'string', default: '1000' },
    parallel: { type: 'string', default: '4' },
    threads: { type: 'string', default: '2' },
    'limit-s': { type: 'string', default: '30' },
    mode: { type: 'string', default: 'embedded' },
  },
});
const num = (k: keyof typeof values): number => Number(values[k]);
const limitMs = num('limit-s') * 1000;

const scratch = mkdtempSync(path.join(os.tmpdir(), 'docpipe-fuzz-'));
const corpus = await buildCorpus(scratch);
const pool = new PoolExecutor({ tmpDir: scratch, allowPrivateNetwork: false }, { threads: num('threads'), taskTimeoutMs: limitMs });
const world = await startWorld(values.mode as Mode, { SWEEP_INTERVAL_S: '0', PLAN_OVERRIDES: UNLIMITED_RATE }, { executor: pool });
const started = performance.now();
let seen = 0;
try {
  const summary = await runCases({ url: world.url, key: world.key, deadlineMs: limitMs * 2 + 10_000 }, corpus, {
    base: num('base'), first: num('first'), count: num('count'), parallel: num('parallel'), batch: 25,
    onCase: (r) => {
      if (++seen % 100 === 0) process.stderr.write(`${seen} cases, ${Math.round((performance.now() - started) / 1000)} s\n`);
      if (r.outcome === 'finding') process.stderr.write(`FINDING case ${r.id} (${r.seed}: ${r.ops.join(' | ')}): ${r.finding}\n`);
    },
  });
  console.log(table(summary.results));
  console.log(`\nbase seed ${num('base')}, cases ${num('first')}…${num('first') + num('count') - 1}, `
    + `${Math.round((performance.now() - started) / 1000)} s, slowest /healthz ${Math.round(summary.maxProbeMs)} ms, `
    + `failed health probes ${summary.failedProbes}`);
  const findings = summary.results.filter((r) => r.outcome === 'finding');
  for (const r of findings) console.log(`finding: case ${r.id} (${r.seed}: ${r.ops.join(' | ')}): ${r.finding}`);
  process.exitCode = findings.length > 0 || summary.failedProbes > 0 ? 1 : 0;
} finally {
  await world.close();
  rmSync(scratch, { recursive: true, force: true });
}
// The tesseract worker keeps the event loop alive; the run is over.
process.exit(process.exitCode ?? 0);
