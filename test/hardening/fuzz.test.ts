// The quick fuzz run: 100 mutated real documents of every kind (bit flips, truncation, splices,
// damaged or swapped parts inside zip packages) through the API, on the worker pool with a short
// time limit. Deterministic: case i is mutated from seed BASE + i, so a failure names its seed
// and `npx tsx bench/fuzz/run.ts --base <BASE> --first <i> --count 1` replays it. One store
// mode: what a damaged document does is the converters' business; the long runs are the bench's
// (`npx tsx bench/fuzz/run.ts --count 200` is this run's cases and the next hundred, embedded).
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { oneMode, startWorld } from '../helpers/world.js';
import { PoolExecutor } from '../../src/pool/pool.js';
import { buildCorpus } from '../fixtures/build/fuzz.js';
import { retried, runCases, table, UNLIMITED_RATE } from '../../bench/fuzz/harness.js';

const BASE = 20240601;
const CASES = 100;
const TASK_LIMIT_MS = 15_000;

t.test('hostile documents through the API', async (t) => {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'docpipe-fuzz-'));
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
  const corpus = await buildCorpus(scratch);
  const modes = oneMode();
  const perMode = Math.ceil(CASES / modes.length);

  for (const [m, mode] of modes.entries()) {
    await t.test(`${perMode} mutated documents (${mode})`, async (t) => {
      const pool = new PoolExecutor({ tmpDir: scratch, allowPrivateNetwork: false }, { threads: 2, taskTimeoutMs: TASK_LIMIT_MS });
      const w = await startWorld(mode, { SWEEP_INTERVAL_S: '0', PLAN_OVERRIDES: UNLIMITED_RATE }, { executor: pool });
      t.teardown(() => w.close());
      const summary = await runCases({ url: w.url, key: w.key, deadlineMs: TASK_LIMIT_MS * 2 + 10_000 }, corpus, {
        base: BASE, first: m * perMode, count: perMode, parallel: 4, batch: 25,
      });
      const { results } = summary;
      t.comment(`\n${table(results)}\nslowest /healthz while fuzzing: ${Math.round(summary.maxProbeMs)} ms`);
      if (retried.length) t.comment(`cases whose first submit lost its connection and were sent again: ${retried.join(', ')}`);

      const findings = results.filter((r) => r.outcome === 'finding');
      t.same(findings.map((r) => `case ${r.id} (${r.seed}: ${r.ops.join(' | ')}): ${r.finding}`), [],
        'every case ends completed, failed with a Problem, or refused with 415/422');
      t.equal(summary.failedProbes, 0, 'after every batch the server still answers /healthz with 200');
      t.ok(new Set(results.map((r) => r.seed)).size >= corpus.length - 2, 'the cases reached (nearly) every kind of document');
      t.ok(results.some((r) => r.outcome === 'failed') && results.some((r) => r.outcome === 'completed'),
        'some damaged documents still convert, others fail their file');

      // No thread stays busy once every case has ended: nothing is stuck past the time limit.
      for (let i = 0; i < 40 && (pool.busy() > 0 || pool.queued() > 0); i++) await new Promise((r) => setTimeout(r, 250));
      t.equal(pool.busy(), 0, 'no pool thread is still busy');
      t.equal(pool.queued(), 0, 'no task is still queued');
      const ok = await w.req('POST', '/v1/convert/text', { json: { text: 'still *here*' } });
      t.equal(ok.status, 200, 'a normal conversion still works afterwards');
    });
  }
});
