// Where the CPU goes per document through the API: `npm run bench:cpu [-- <quality> <seconds>
// <env as JSON> <node options as JSON> <warm-up seconds>]` starts docpipe (env added to the
// bench's, e.g. '{"WORKER_YOUNG_MB":"48"}'; node options before the bench's own, e.g.
// '["--no-flush-bytecode"]'), sends scenario B's PDFs (texlive manuals when installed, pdfkit
// reports otherwise) at four in flight for one unmeasured pass (or passes until the warm-up
// seconds; scenario B warms for WARM_S), then for `seconds`, and prints the CPU time (schedstat) each
// server thread, Postgres, Redis and this load generator spent per document over the measured
// passes, with the total against the wall time of both cores. On 2 cores the API path's cost is
// everything outside the two converter threads.
//
// `cheap` in place of the quality drives scenario A's load instead (wrk, 64 connections on
// POST /v1/convert/markdown/html with its 1 KB body): warm-up seconds of load, then `seconds`
// measured, and the same table per request, wrk's own CPU in it, with the rate, the latency, the
// conversions per group commit (/metrics) and how busy the machine was. Under A the server's two
// busiest threads are its HTTP threads (the main thread is acceptor 0).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setUpBench } from './docpipe.js';
import { generatedPdfs, texlivePdfs, TEXDOCS } from './corpus.js';
import { apiThroughput } from './throughput.js';
import { cpuShares, machineCpu, threadSched } from './proc.js';
import { wrk } from './wrk.js';
import { oneKbJson } from './scenarios/a-cheap.js';
import { metricSum } from '../src/server/metrics.js';

/** USER_HZ: the unit of the times in /proc/<pid>/stat (100 on Linux's architectures here). */
const CLOCK_TICKS = 100;

/** CPU time so far, in ms, of each server thread (by thread id), Postgres and Redis (all their
 *  processes), this process (all its threads), and the children this process has reaped (wrk). */
function snapshot(serverPid: number): Map<string, number> {
  const m = new Map<string, number>();
  const add = (k: string, ns: number) => m.set(k, (m.get(k) ?? 0) + ns / 1e6);
  for (const [tid, s] of threadSched(serverPid)) add(tid === String(serverPid) ? 'server main thread' : `server thread ${tid}`, s.cpu);
  for (const s of threadSched('self').values()) add('load generator (this process)', s.cpu);
  // wrk, once it has ended: the CPU of this process's reaped children (cutime + cstime, in clock ticks).
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const [cutime, cstime] = stat.slice(stat.lastIndexOf(')') + 2).split(' ').slice(13, 15).map(Number);
  add('wrk (ended children of this process)', (cutime! + cstime!) * (1e9 / CLOCK_TICKS));
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
const bench = await setUpBench();
try {
  const inst = await bench.start(env, nodeArgs);
  try {
    if (quality === 'cheap') await cheapPath(inst);
    else await pdfs(inst);
  } finally {
    await inst.stop();
  }
} finally {
  await bench.close();
  rmSync(scratch, { recursive: true, force: true });
}

/** CPU per unit of work, by thread or process, over `before` → `after`. */
function table(before: Map<string, number>, after: Map<string, number>, units: number, unit: 'document' | 'request', wallSeconds: number): void {
  const rows = [...after].map(([k, ms]) => ({ k, ms: ms - (before.get(k) ?? 0) })).filter((x) => x.ms > 0).sort((a, b) => b.ms - a.ms);
  const per = (ms: number) => unit === 'request' ? `${((ms * 1000) / units).toFixed(1).padStart(8)} µs` : `${(ms / units).toFixed(2).padStart(8)} ms`;
  console.log(`CPU per ${unit}:`);
  for (const x of rows) console.log(`${per(x.ms)}  ${x.k}`);
  const total = rows.reduce((a, x) => a + x.ms, 0);
  console.log(`${per(total)}  in all, against ${per(wallSeconds * 1000 * os.availableParallelism())} of wall time × ${os.availableParallelism()} cores`);
}

async function pdfs(inst: { origin: string; peakRss(): number; pid: number }): Promise<void> {
  const files = existsSync(TEXDOCS) ? texlivePdfs(3) : await generatedPdfs(scratch, 24, 20);
  const fields = { quality };
  const unit = (f: { pages: number }) => f.pages;
  await apiThroughput(inst.origin, bench.key, 'pdf', files, { fields, concurrency: 4, minSeconds: warmSeconds, unit, warmup: 0 });
  const before = snapshot(inst.pid);
  const r = await apiThroughput(inst.origin, bench.key, 'pdf', files, { fields, concurrency: 4, minSeconds: seconds, unit, warmup: 0 });
  const after = snapshot(inst.pid);
  console.log(`quality ${quality}: ${r.rate.toFixed(1)} pages/s, ${r.documents} documents in ${r.seconds.toFixed(1)} s, answers ${JSON.stringify(r.answers)}, `
    + `peak RSS ${(inst.peakRss() / 2 ** 20).toFixed(0)} MB, env ${JSON.stringify(env)}, node ${JSON.stringify(nodeArgs)}, warm-up ${warmSeconds} s`);
  table(before, after, r.documents, 'document', r.seconds);
}

async function cheapPath(inst: { origin: string; pid: number }): Promise<void> {
  const load = { url: `${inst.origin}/v1/convert/markdown/html`, method: 'POST', body: oneKbJson(), connections: 64,
    headers: { 'x-api-key': bench.key, 'content-type': 'application/json' } };
  if (warmSeconds > 0) await wrk({ ...load, seconds: warmSeconds });
  const commits = async (): Promise<{ batches: number; conversions: number; committing: number; waits: number; waiting: number }> => {
    const text = await (await fetch(`${inst.origin}/metrics`)).text();
    return {
      batches: metricSum(text, 'docpipe_group_commit_batches_total'), conversions: metricSum(text, 'docpipe_group_commit_conversions_total'),
      committing: metricSum(text, 'docpipe_group_commit_seconds_total'), waits: metricSum(text, 'docpipe_group_commit_turn_waits_total'),
      waiting: metricSum(text, 'docpipe_group_commit_turn_wait_seconds_total'),
    };
  };
  const c0 = await commits();
  const before = snapshot(inst.pid);
  const m0 = machineCpu();
  const r = await wrk({ ...load, seconds });
  const m1 = machineCpu();
  const after = snapshot(inst.pid);
  const c1 = await commits();
  const busy = cpuShares(m0, m1);
  const batch = (c1.conversions - c0.conversions) / Math.max(1, c1.batches - c0.batches);
  console.log(`cheap path: ${r.rps.toFixed(0)} req/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, ${r.requests} answers (${r.non2xx} not 2xx), `
    + `${batch.toFixed(1)} conversions per group commit, the machine ${busy ? `${(100 * busy.busy).toFixed(0)} % busy` : 'busy: unknown'}, `
    + `env ${JSON.stringify(env)}, node ${JSON.stringify(nodeArgs)}, warm-up ${warmSeconds} s`);
  // With the turn, commits do not overlap: their time over the wall time is the share of it
  // the process had one in flight, and the rest is the gaps between them.
  const batches = Math.max(1, c1.batches - c0.batches);
  const committing = c1.committing - c0.committing;
  console.log(`group commits: ${(1000 * committing / batches).toFixed(2)} ms each from taken to settled, `
    + `${(100 * (c1.waits - c0.waits) / batches).toFixed(0)} % of them found the turn taken and waited ${(1000 * (c1.waiting - c0.waiting) / Math.max(1, c1.waits - c0.waits)).toFixed(2)} ms each, `
    + `one in flight ${(100 * committing / r.seconds).toFixed(0)} % of the time`);
  table(before, after, r.requests, 'request', r.seconds);
}
