// A. The cheap path: authenticated POST /v1/convert/markdown/html with a 1 KB JSON body over 64
// connections, against a bare uWebSockets.js server (the ceiling) and a bare node:http server
// that answer the very JSON docpipe answered, measured with the same generator in the same run
// (wrk, which leaves the cores to the servers). Every 200 must be a conversion persisted in
// Postgres: the rows are counted afterwards. The scaling row runs docpipe again with one
// acceptor (HTTP_THREADS=1) beside the default.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { closedLoop, type LoadResult } from '../load.js';
import { wrk } from '../wrk.js';
import { startBare } from '../baselines/servers.js';
import { atMostRow, checkRow, infoRow, notes, ratioRow, type Scenario } from '../types.js';
import { prose } from '../corpus.js';
import { requestsByAcceptor } from '../../src/server/metrics.js';
import { WARM_S } from '../docpipe.js';

const PATH = '/v1/convert/markdown/html';
const CONNECTIONS = 64;

/** A JSON body of exactly 1,024 bytes: a small Markdown document. */
export function oneKbJson(): string {
  const head = '# Weekly notes\n\nSome **bold** text, a [link](https://example.com) and `code`.\n\n- first item\n- second item\n\n';
  const make = (n: number) => JSON.stringify({ markdown: head + prose(5, 200).slice(0, n) });
  let n = 1024;
  while (Buffer.byteLength(make(n)) > 1024) n--;
  return make(n).replace(/"\}$/, `${' '.repeat(1024 - Buffer.byteLength(make(n)))}"}`);
}

function summary(r: LoadResult): Record<string, unknown> {
  return { rps: r.rps, ok: r.ok, statuses: r.statuses, errors: r.errors, p50_ms: r.p50, p99_ms: r.p99, max_ms: r.max,
    mean_ms: r.mean, seconds: r.seconds, samples: r.samples };
}

/** One measured load against `origin`: wrk when it is installed, else the bench's own generator. */
interface Measured { rps: number; p50: number; p99: number; ok: number; failures: number; sample?: string }

export const cheapPath: Scenario = {
  id: 'A',
  title: 'cheap path',
  async run(ctx) {
    const S = 'A cheap path';
    const body = oneKbJson();
    const headers = { 'x-api-key': ctx.bench.key, 'content-type': 'application/json' };
    const useWrk = ctx.tools.wrk;
    const warmS = ctx.quick ? 1 : 3;
    const runS = ctx.quick ? 1 : 10;
    // docpipe's threads (the event loop and each acceptor) compile the request path's hot code
    // under load for most of a minute: with --trace-opt --trace-deopt, 446, 147, 18 and 72
    // compiles or deoptimisations in four 15 s windows after 10 s of load, while the rate rose
    // from 1,765 to 2,390 req/s. The measure is the steady state, after docpipeWarmS; the
    // first runS seconds after the start are reported on their own row.
    const docpipeWarmS = ctx.quick ? 0 : WARM_S;
    const generator = useWrk ? 'wrk' : 'the bench\'s own generator (wrk not installed)';

    const load = async (origin: string, seconds: number): Promise<Measured> => {
      if (useWrk) {
        const r = await wrk({ url: origin + PATH, method: 'POST', headers, body, connections: CONNECTIONS, seconds });
        const ok = r.requests - r.non2xx;
        return { rps: r.rps, p50: r.p50, p99: r.p99, ok, failures: r.non2xx + r.errors,
          sample: r.non2xx + r.errors > 0 ? `${r.non2xx} non-2xx, ${r.errors} socket errors` : undefined };
      }
      const r: LoadResult = await closedLoop({ origin, connections: CONNECTIONS, durationMs: seconds * 1000,
        request: () => ({ method: 'POST', path: PATH, headers, body }), ok: (a) => a.status === 200 });
      const failures = r.errors + Object.entries(r.statuses).filter(([st]) => st !== '200').reduce((a, [, n]) => a + n, 0);
      return { rps: r.rps, p50: r.p50, p99: r.p99, ok: r.ok, failures, sample: r.samples[0] };
    };

    /** docpipe with `threads` acceptors (undefined: the default), and what it persisted. */
    const docpipe = async (threads?: number) => {
      const before = await countPersisted(ctx);
      const inst = await ctx.bench.start(threads === undefined ? {} : { HTTP_THREADS: String(threads) });
      let answers = 0;
      let cold: Measured;
      let measured: Measured;
      let spread: number[] = [];
      try {
        const first = await fetch(inst.origin + PATH, { method: 'POST', headers, body });
        const text = await first.text();
        if (first.status !== 200) throw new Error(`cheap path answered ${first.status}: ${text.slice(0, 300)}`);
        answers++;
        writeFileSync(path.join(ctx.dir, 'a-response.json'), text);
        ctx.log(`A: docpipe (HTTP_THREADS=${threads ?? 'default'}) ${runS} s from the start, warm-up to ${docpipeWarmS} s, then ${runS} s at ${CONNECTIONS} connections, ${generator}`);
        cold = await load(inst.origin, runS);
        const warm = await load(inst.origin, Math.max(warmS, docpipeWarmS - runS));
        const served = await byAcceptor(inst.origin);
        measured = await load(inst.origin, runS);
        spread = spreadSince(served, await byAcceptor(inst.origin));
        answers += cold.ok + warm.ok + measured.ok;
      } finally {
        await inst.stop();
      }
      return { measured, cold, answers, persisted: (await countPersisted(ctx)) - before, by_acceptor: spread };
    };

    const main = await docpipe();
    const single = ctx.quick ? undefined : await docpipe(1);
    const bare: Record<string, Measured> = {};
    for (const kind of ['uws', 'http'] as const) {
      const server = await startBare(kind, path.join(ctx.dir, 'a-response.json'));
      try {
        ctx.log(`A: bare ${kind} warm-up, then ${runS} s`);
        await load(server.origin, warmS);
        bare[kind] = await load(server.origin, runS);
      } finally {
        await server.stop();
      }
    }
    const fig = (r: Measured) => ({ value: r.rps, unit: 'req/s' });
    const m = main.measured;
    const note = notes(m.failures > 0 && `${m.failures} failed answers; e.g. ${m.sample ?? ''}`, `load: ${generator}`);
    // wrk stops with requests in flight: the server may have stored a few it never got to answer
    // (at most one per connection in each of the three loads: the first seconds, the warm-up and
    // the run), but never fewer than it answered.
    const stored = (r: { answers: number; persisted: number }) => r.persisted >= r.answers && r.persisted - r.answers <= 3 * CONNECTIONS;
    const rows = [
      ratioRow(S, 'req/s vs bare uWebSockets.js', fig(m), { ...fig(bare.uws!), label: 'bare uWS' }, 0.1, note),
      infoRow(S, 'req/s vs bare node:http', fig(m), { ...fig(bare.http!), label: 'bare node:http' }),
      atMostRow(S, 'p99 latency', { value: m.p99, unit: 'ms' }, 15, `p50 ${m.p50.toFixed(1)} ms`),
      infoRow(S, `req/s in the first ${runS} s after start (vs the measured run)`, fig(main.cold), { ...fig(m), label: 'measured, warm' },
        `p99 ${main.cold.p99.toFixed(1)} ms`),
      infoRow(S, 'busiest acceptor thread\'s share of the measured run', { value: busiest(main.by_acceptor), unit: '% of requests' }, null,
        `by thread: ${main.by_acceptor.map((n) => n.toLocaleString('en-US')).join(' / ')} (the kernel spreads connections over the threads' listeners)`),
      checkRow(S, 'every 200 persisted', stored(main), { value: main.persisted, unit: 'rows' },
        `≥ ${main.answers} answers`, stored(main) ? undefined : `${main.answers} answers 200, ${main.persisted} conversions in Postgres`),
    ];
    if (single) {
      rows.push(infoRow(S, 'scaling: default HTTP_THREADS vs 1', fig(m), { ...fig(single.measured), label: 'HTTP_THREADS=1' },
        `p99 ${m.p99.toFixed(1)} vs ${single.measured.p99.toFixed(1)} ms`));
      rows.push(checkRow(S, 'every 200 persisted (HTTP_THREADS=1)', stored(single), { value: single.persisted, unit: 'rows' }, `≥ ${single.answers} answers`));
    }
    return {
      rows,
      raw: { connections: CONNECTIONS, body_bytes: Buffer.byteLength(body), generator, docpipe: main, docpipe_one_thread: single,
        bare_uws: bare.uws, bare_http: bare.http },
    };
  },
};

/** Requests answered so far by each acceptor thread (the process's /metrics, in thread order). */
async function byAcceptor(origin: string): Promise<number[]> {
  const counts: number[] = [];
  for (const [acceptor, n] of requestsByAcceptor(await (await fetch(`${origin}/metrics`)).text())) counts[acceptor] = n;
  return counts;
}

/** The busiest acceptor's share of the requests, in percent (100 / threads when even). */
function busiest(counts: number[]): number {
  const total = counts.reduce((a, n) => a + n, 0);
  return total > 0 ? (100 * Math.max(...counts)) / total : NaN;
}

/** What each acceptor answered between two readings. */
function spreadSince(before: number[], after: number[]): number[] {
  return after.map((n, i) => n - (before[i] ?? 0));
}

async function countPersisted(ctx: { bench: { db: { sql: import('../../src/store/db.js').Sql }; accountId: string } }): Promise<number> {
  const [row] = await ctx.bench.db.sql`select count(*)::int as n from conversions
    where account_id = ${ctx.bench.accountId} and endpoint = 'markdown/html' and status = 'completed'`;
  return Number(row!.n);
}
