// A. The cheap path: authenticated POST /v1/convert/markdown/html with a 1 KB JSON body over 64
// connections, against a bare uWebSockets.js server (the ceiling) and a bare node:http server
// that answer the very JSON docpipe answered, measured with the same generator in the same run.
// Every 200 must be a conversion persisted in Postgres: the rows are counted afterwards.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { closedLoop, type LoadResult } from '../load.js';
import { startBare } from '../baselines/servers.js';
import { atMostRow, checkRow, ratioRow, type Scenario } from '../types.js';
import { prose } from '../corpus.js';

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

export const cheapPath: Scenario = {
  id: 'A',
  title: 'cheap path',
  async run(ctx) {
    const S = 'A cheap path';
    const warmMs = ctx.quick ? 200 : 3_000;
    const runMs = ctx.quick ? 700 : 10_000;
    const body = oneKbJson();
    const headers = { 'x-api-key': ctx.bench.key, 'content-type': 'application/json' };
    const request = () => ({ method: 'POST', path: PATH, headers, body });
    const ok = (a: { status: number }) => a.status === 200;
    const load = (origin: string, durationMs: number) =>
      closedLoop({ origin, connections: CONNECTIONS, durationMs, request, ok });

    const before = await countPersisted(ctx);
    const inst = await ctx.bench.start();
    let docpipe: LoadResult;
    let answers = 0;
    const responseFile = path.join(ctx.dir, 'a-response.json');
    try {
      const first = await fetch(inst.origin + PATH, { method: 'POST', headers, body });
      const text = await first.text();
      if (first.status !== 200) throw new Error(`cheap path answered ${first.status}: ${text.slice(0, 300)}`);
      answers++;
      writeFileSync(responseFile, text);
      ctx.log(`A: docpipe warm-up ${warmMs} ms, then ${runMs} ms at ${CONNECTIONS} connections`);
      const warm = await load(inst.origin, warmMs);
      docpipe = await load(inst.origin, runMs);
      answers += warm.ok + docpipe.ok;
    } finally {
      await inst.stop();
    }
    const persisted = (await countPersisted(ctx)) - before;

    const bare: Record<string, LoadResult> = {};
    for (const kind of ['uws', 'http'] as const) {
      const server = await startBare(kind, responseFile);
      try {
        ctx.log(`A: bare ${kind} warm-up, then ${runMs} ms`);
        await load(server.origin, warmMs);
        bare[kind] = await load(server.origin, runMs);
      } finally {
        await server.stop();
      }
    }
    const fig = (r: LoadResult) => ({ value: r.rps, unit: 'req/s' });
    const failures = docpipe.errors + Object.entries(docpipe.statuses).filter(([s]) => s !== '200').reduce((a, [, n]) => a + n, 0);
    const note = failures ? `${failures} non-200 answers/errors; e.g. ${docpipe.samples[0] ?? ''}` : undefined;
    return {
      rows: [
        ratioRow(S, 'req/s vs bare uWebSockets.js', fig(docpipe), { ...fig(bare.uws!), label: 'bare uWS' }, 0.4, note),
        ratioRow(S, 'req/s vs bare node:http', fig(docpipe), { ...fig(bare.http!), label: 'bare node:http' }, 1.5),
        atMostRow(S, 'p99 latency', { value: docpipe.p99, unit: 'ms' }, 20, `p50 ${docpipe.p50.toFixed(1)} ms`),
        checkRow(S, 'every 200 persisted', persisted === answers, { value: persisted, unit: 'rows' },
          `= ${answers} answers`, persisted === answers ? undefined : `${answers} answers 200, ${persisted} conversions in Postgres`),
      ],
      raw: { connections: CONNECTIONS, body_bytes: Buffer.byteLength(body), docpipe: summary(docpipe),
        bare_uws: summary(bare.uws!), bare_http: summary(bare.http!), answers_200: answers, persisted },
    };
  },
};

async function countPersisted(ctx: { bench: { db: { sql: import('../../src/store/db.js').Sql }; accountId: string } }): Promise<number> {
  const [row] = await ctx.bench.db.sql`select count(*)::int as n from conversions
    where account_id = ${ctx.bench.accountId} and endpoint = 'markdown/html' and status = 'completed'`;
  return Number(row!.n);
}
