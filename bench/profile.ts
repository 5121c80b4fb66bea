// Profiles one scenario's load against a docpipe started with `--cpu-prof`: the cheap path (A)
// by default, for `npm run bench:profile [-- <seconds> <connections> <http threads>]`. Prints the
// load figures and, for each thread that served requests, the 25 functions with the most self
// time, and leaves the .cpuprofile files under bench/results/profiles/ for a closer look in
// Chrome DevTools.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { closedLoop } from './load.js';
import { ROOT, setUpBench } from './docpipe.js';
import { oneKbJson } from './scenarios/a-cheap.js';

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; }

function topSelf(profile: Profile, n: number): Array<{ fn: string; ms: number; share: number }> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const f = byId.get(id)!.callFrame;
    const where = f.url ? `${f.url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${f.lineNumber + 1}` : '(native)';
    const key = `${(f.functionName || '(anonymous)').slice(0, 60)} ${where}`;
    const dt = (profile.timeDeltas[i] ?? 0) / 1000;
    self.set(key, (self.get(key) ?? 0) + dt);
    total += dt;
  });
  return [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, n)
    .map(([fn, ms]) => ({ fn, ms: Math.round(ms), share: Math.round((ms / total) * 1000) / 10 }));
}

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 64);
const httpThreads = process.argv[4] ?? '1';
const dir = path.join(ROOT, 'bench', 'results', 'profiles', new Date().toISOString().replace(/[:.]/g, '-'));
mkdirSync(dir, { recursive: true });
const bench = await setUpBench();
try {
  const inst = await bench.start({ HTTP_THREADS: httpThreads }, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  const body = oneKbJson();
  const headers = { 'x-api-key': bench.key, 'content-type': 'application/json' };
  const request = () => ({ method: 'POST', path: '/v1/convert/markdown/html', headers, body });
  try {
    await closedLoop({ origin: inst.origin, connections, durationMs: 2_000, request, ok: (a) => a.status === 200 });
    const r = await closedLoop({ origin: inst.origin, connections, durationMs: seconds * 1000, request, ok: (a) => a.status === 200 });
    console.log(`${r.rps.toFixed(0)} req/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, statuses ${JSON.stringify(r.statuses)}`);
  } finally {
    await inst.stop();
  }
  // One profile per thread (main, module loader, acceptor and pool threads): the ones that ran
  // the server's request code are the acceptors.
  const profiles = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => ({ file: path.join(dir, f), profile: JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as Profile }));
  const acceptors = profiles.filter((p) => p.profile.nodes.some((n) => /src\/server\/respond\.(ts|js)$/.test(n.callFrame.url)));
  if (acceptors.length === 0) throw new Error('no profile of an acceptor (was the server stopped with a signal it could not handle?)');
  for (const a of acceptors) {
    console.table(topSelf(a.profile, 25));
    console.log(`profile of an acceptor: ${a.file}`);
  }
} finally {
  await bench.close();
}
