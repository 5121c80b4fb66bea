// Where the CPU goes per document through the API: `npm run bench:cpu [-- <quality> <seconds>
// <env as JSON> <node options as JSON> <warm-up seconds>]` starts docpipe (env added to the
// bench's, e.g. '{"WORKER_YOUNG_MB":"48"}'; node options before the bench's own, e.g.
// '["--no-flush-bytecode"]'), sends scenario B's PDFs (texlive manuals when installed, pdfkit
// reports otherwise) at four in flight for one unmeasured pass (or passes until the warm-up
// seconds; scenario B warms for WARM_S), then for `seconds`, and prints the CPU time (schedstat) each
// server thread, Postgres, Redis and this load generator spent per document over the measured
// passes, with the total against the wall time of both cores. On 2 cores the API path's cost is
// everything outside the two converter threads.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setUpBench } from './docpipe.js';
import { generatedPdfs, texlivePdfs, TEXDOCS } from './corpus.js';
import { apiThroughput } from './throughput.js';
import { threadSched } from './proc.js';

/** CPU time so far, in ms, of each server thread (by thread id), Postgres and Redis (all their
 *  processes), and this process (all its threads). */
function snapshot(serverPid: number): Map<string, number> {
  const m = new Map<string, number>();
  const add = (k: string, ns: number) => m.set(k, (m.get(k) ?? 0) + ns / 1e6);
  for (const [tid, s] of threadSched(serverPid)) add(tid === String(serverPid) ? 'server main thread' : `server thread ${tid}`, s.cpu);
  for (const s of threadSched('self').values()) add('load generator (this process)', s.cpu);
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let name: string;
    try {
      name = readFileSync(`/proc/${pid}/comm`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    const owner = name.startsWith('postgres') ? 'postgres (all processes)' : name.startsWith('redis') ? 'redis' : null;
    if (owner) for (const s of threadSched(Number(pid)).values()) add(owner, s.cpu);
  }
  return m;
}

const quality = process.argv[2] ?? 'standard';
const seconds = Number(process.argv[3] ?? 20);
const env = process.argv[4] ? JSON.parse(process.argv[4]) as Record<string, string> : {};
const nodeArgs = process.argv[5] ? JSON.parse(process.argv[5]) as string[] : [];
const warmSeconds = Number(process.argv[6] ?? 0);
const scratch = mkdtempSync(path.join(os.tmpdir(), 'docpipe-bench-cpu-'));
const files = existsSync(TEXDOCS) ? texlivePdfs(3) : await generatedPdfs(scratch, 24, 20);
const unit = (f: { pages: number }) => f.pages;
const bench = await setUpBench();
try {
  const inst = await bench.start(env, nodeArgs);
  try {
    const fields = { quality };
    await apiThroughput(inst.origin, bench.key, 'pdf', files, { fields, concurrency: 4, minSeconds: warmSeconds, unit, warmup: 0 });
    const before = snapshot(inst.pid);
    const r = await apiThroughput(inst.origin, bench.key, 'pdf', files, { fields, concurrency: 4, minSeconds: seconds, unit, warmup: 0 });
    const after = snapshot(inst.pid);
    const rows = [...after].map(([k, ms]) => ({ k, ms: ms - (before.get(k) ?? 0) })).filter((x) => x.ms > 0).sort((a, b) => b.ms - a.ms);
    const perDoc = (ms: number) => `${(ms / r.documents).toFixed(2).padStart(8)} ms`;
    console.log(`quality ${quality}: ${r.rate.toFixed(1)} pages/s, ${r.documents} documents in ${r.seconds.toFixed(1)} s, answers ${JSON.stringify(r.answers)}, `
      + `peak RSS ${(inst.peakRss() / 2 ** 20).toFixed(0)} MB, env ${JSON.stringify(env)}, node ${JSON.stringify(nodeArgs)}, warm-up ${warmSeconds} s`);
    console.log('CPU per document:');
    for (const x of rows) console.log(`${perDoc(x.ms)}  ${x.k}`);
    const total = rows.reduce((a, x) => a + x.ms, 0);
    console.log(`${perDoc(total)}  in all, against ${perDoc(r.seconds * 1000 * os.availableParallelism())} of wall time × ${os.availableParallelism()} cores`);
  } finally {
    await inst.stop();
  }
} finally {
  await bench.close();
  rmSync(scratch, { recursive: true, force: true });
}
