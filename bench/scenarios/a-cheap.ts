// A. The cheap path: authenticated POST /v1/convert/markdown/html with a 1 KB JSON body over 64
// connections, against a bare uWebSockets.js server (the ceiling) and a bare node:http server
// that answer the very JSON docpipe answered, measured with the same generator in the same run
// (wrk, which leaves the cores to the servers). Every 200 must be a conversion persisted in
// Postgres: the rows are counted afterwards. The scaling row runs docpipe again with one
// acceptor (HTTP_THREADS=1) beside the default.
//
// The three servers are measured in rounds, docpipe then bare uWS then bare node:http, each
// round's ratio from its own two runs, and the row shows the round of the median ratio (all the
// rounds in its note). On a shared virtual machine the same code's rate moved by a third within
// minutes (5,249 to 7,144 req/s in alternating runs of `bench:cpu -- cheap`): one run of each,
// minutes apart, measured the host as much as the servers. A server not being measured is
// stopped (SIGSTOP) for the other's run: docpipe idle takes about 1.5 % of a core (its timers
// and pollers), which would come off the baselines.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { closedLoop, type LoadResult } from '../load.js';
import { wrk } from '../wrk.js';
import { startBare, type BareServer } from '../baselines/servers.js';
import { atMostRow, checkRow, infoRow, notes, ratioRow, type Scenario } from '../types.js';
import { prose } from '../corpus.js';
import { requestsByAcceptor } from '../../src/server/metrics.js';
import { WARM_S } from '../docpipe.js';

const PATH = '/v1/convert/markdown/html';
const CONNECTIONS = 64;
/** Rounds of the three servers' measured runs (one each a round). */
const ROUNDS = 3;

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

    /** docpipe with `threads` acceptors (undefined: the default), and what it persisted; with
     *  `rounds`, measured in turns with the bare servers (each round's runs: docpipe, uWS, http). */
    const docpipe = async (threads?: number, rounds = 1) => {
      const before = await countPersisted(ctx);
      const inst = await ctx.bench.start(threads === undefined ? {} : { HTTP_THREADS: String(threads) });
      let answers = 0;
      let cold: Measured;
      const measured: Measured[] = [];
      const bare: Array<Record<'uws' | 'http', Measured>> = [];
      let spread: number[] = [];
      const servers: BareServer[] = [];
      let paused: number | undefined;
      const pause = (pid: number) => { process.kill(pid, 'SIGSTOP'); paused = pid; };
      const resume = () => { if (paused !== undefined) wake(paused); paused = undefined; };
      try {
        const first = await fetch(inst.origin + PATH, { method: 'POST', headers, body });
        const text = await first.text();
        if (first.status !== 200) throw new Error(`cheap path answered ${first.status}: ${text.slice(0, 300)}`);
        answers++;
        writeFileSync(path.join(ctx.dir, 'a-response.json'), text);
        ctx.log(`A: docpipe (HTTP_THREADS=${threads ?? 'default'}) ${runS} s from the start, warm-up to ${docpipeWarmS} s, then ${runS} s at ${CONNECTIONS} connections, ${generator}`);
        cold = await load(inst.origin, runS);
        const warm = await load(inst.origin, Math.max(warmS, docpipeWarmS - runS));
        answers += cold.ok + warm.ok;
        if (rounds > 1) {
          pause(inst.pid);
          for (const kind of ['uws', 'http'] as const) {
            const server = await startBare(kind, path.join(ctx.dir, 'a-response.json'));
            servers.push(server);
            ctx.log(`A: bare ${kind} warm-up`);
            await load(server.origin, warmS);
            process.kill(server.pid, 'SIGSTOP');
          }
          resume();
        }
        const served = await byAcceptor(inst.origin);
        for (let r = 0; r < rounds; r++) {
          if (rounds > 1) ctx.log(`A: round ${r + 1} of ${rounds}: docpipe, bare uws, bare http, ${runS} s each`);
          const m = await load(inst.origin, runS);
          measured.push(m);
          answers += m.ok;
          if (servers.length === 0) continue;
          pause(inst.pid);
          const round = {} as Record<'uws' | 'http', Measured>;
          for (const [i, kind] of (['uws', 'http'] as const).entries()) {
            const server = servers[i]!;
            process.kill(server.pid, 'SIGCONT');
            round[kind] = await load(server.origin, runS);
            process.kill(server.pid, 'SIGSTOP');
          }
          bare.push(round);
          resume();
        }
        spread = spreadSince(served, await byAcceptor(inst.origin));
      } finally {
        resume();
        for (const server of servers) {
          wake(server.pid);
          await server.stop();
        }
        await inst.stop();
      }
      return { measured, bare, cold, answers, persisted: (await countPersisted(ctx)) - before, by_acceptor: spread };
    };

    const main = await docpipe(undefined, ctx.quick ? 1 : ROUNDS);
    const single = ctx.quick ? undefined : await docpipe(1);
    if (main.bare.length === 0) {
      // --quick: one run of each, the bare servers after docpipe.
      const round = {} as Record<'uws' | 'http', Measured>;
      for (const kind of ['uws', 'http'] as const) {
        const server = await startBare(kind, path.join(ctx.dir, 'a-response.json'));
        try {
          ctx.log(`A: bare ${kind} warm-up, then ${runS} s`);
          await load(server.origin, warmS);
          round[kind] = await load(server.origin, runS);
        } finally {
          await server.stop();
        }
      }
      main.bare.push(round);
    }
    const fig = (r: Measured) => ({ value: r.rps, unit: 'req/s' });
    // The round whose ratio is the median (the lower middle of an even count).
    const ratios = main.measured.map((m, r) => m.rps / main.bare[r]!.uws.rps);
    const mid = ratios.map((x, r) => [x, r] as const).sort((a, b) => a[0] - b[0])[Math.floor((ratios.length - 1) / 2)]![1];
    const m = main.measured[mid]!;
    const bare = main.bare[mid]!;
    const byRound = (f: (r: number) => string) => main.measured.length > 1
      ? `rounds: ${main.measured.map((_, r) => f(r)).join(' / ')}` : undefined;
    const p99s = main.measured.map((x) => x.p99);
    const p99 = [...p99s].sort((a, b) => a - b)[Math.floor((p99s.length - 1) / 2)]!;
    const failures = main.measured.reduce((n, x) => n + x.failures, 0);
    const note = notes(failures > 0 && `${failures} failed answers; e.g. ${main.measured.find((x) => x.sample)?.sample ?? ''}`, `load: ${generator}`,
      byRound((r) => `${Math.round(main.measured[r]!.rps).toLocaleString('en-US')} vs ${Math.round(main.bare[r]!.uws.rps).toLocaleString('en-US')} = ${ratios[r]!.toFixed(3)}×`));
    // wrk stops with requests in flight: the server may have stored a few it never got to answer
    // (at most one per connection in each load: the first seconds, the warm-up and each measured
    // run), but never fewer than it answered.
    const stored = (r: { answers: number; persisted: number; measured: Measured[] }) =>
      r.persisted >= r.answers && r.persisted - r.answers <= (2 + r.measured.length) * CONNECTIONS;
    const rows = [
      ratioRow(S, 'req/s vs bare uWebSockets.js', fig(m), { ...fig(bare.uws!), label: 'bare uWS' }, 0.1, note),
      infoRow(S, 'req/s vs bare node:http', fig(m), { ...fig(bare.http), label: 'bare node:http' },
        byRound((r) => `${(main.measured[r]!.rps / main.bare[r]!.http.rps).toFixed(3)}×`)),
      atMostRow(S, 'p99 latency', { value: p99, unit: 'ms' }, 15, notes(`p50 ${m.p50.toFixed(1)} ms`,
        main.measured.length > 1 && `the median of the rounds' p99: ${p99s.map((x) => x.toFixed(1)).join(' / ')} ms`)),
      infoRow(S, `req/s in the first ${runS} s after start (vs the measured run)`, fig(main.cold), { ...fig(m), label: 'measured, warm' },
        `p99 ${main.cold.p99.toFixed(1)} ms`),
      infoRow(S, 'busiest acceptor thread\'s share of the measured run', { value: busiest(main.by_acceptor), unit: '% of requests' }, null,
        `by thread: ${main.by_acceptor.map((n) => n.toLocaleString('en-US')).join(' / ')} (the kernel spreads connections over the threads' listeners)`),
      checkRow(S, 'every 200 persisted', stored(main), { value: main.persisted, unit: 'rows' },
        `≥ ${main.answers} answers`, stored(main) ? undefined : `${main.answers} answers 200, ${main.persisted} conversions in Postgres`),
    ];
    if (single) {
      const one = single.measured[0]!;
      rows.push(infoRow(S, 'scaling: default HTTP_THREADS vs 1', fig(m), { ...fig(one), label: 'HTTP_THREADS=1' },
        `p99 ${m.p99.toFixed(1)} vs ${one.p99.toFixed(1)} ms`));
      rows.push(checkRow(S, 'every 200 persisted (HTTP_THREADS=1)', stored(single), { value: single.persisted, unit: 'rows' }, `≥ ${single.answers} answers`));
    }
    return {
      rows,
      raw: { connections: CONNECTIONS, body_bytes: Buffer.byteLength(body), generator, docpipe: main, docpipe_one_thread: single,
        median_round: mid, bare_uws: bare.uws, bare_http: bare.http },
    };
  },
};

/** Lets a stopped server go on; one that has ended meanwhile is left be. */
function wake(pid: number): void {
  try {
    process.kill(pid, 'SIGCONT');
  } catch {
    // ended: its stop() finds it gone
  }
}

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
