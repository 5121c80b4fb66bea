// Documents through the API: every corpus file submitted as multipart to one convert endpoint,
// `concurrency` requests in flight, whole passes over the corpus until `minSeconds` is filled
// (the same rule as the native baselines). Counts the units of the sources that completed.
import { Pool } from 'undici';
import { runAll, type PassRate } from './load.js';
import { convert, fileBody, type Body, type Outcome } from './client.js';
import type { CorpusFile } from './corpus.js';
import { POOL_THREADS } from './docpipe.js';
import type { Ctx } from './types.js';

export interface ApiResult {
  rate: number;
  units: number;
  seconds: number;
  passes: number;
  documents: number;
  failures: number;
  /** Submit answers by status and async reason, e.g. "200", "202 pages_exceed_sync_limit". */
  answers: Record<string, number>;
  samples: string[];
  /** The warm-up pass before the measured ones: its rate is what a process just started
   *  gives (its threads still compiling the converter's hot code). */
  warm?: PassRate;
}

export async function apiThroughput(origin: string, key: string, endpoint: string, files: readonly CorpusFile[],
  opts: { fields?: Record<string, string>; concurrency: number; minSeconds: number; unit: (f: CorpusFile, o: Outcome) => number;
    warmup?: number; warmSeconds?: number }): Promise<ApiResult> {
  const pool = new Pool(origin, { connections: opts.concurrency, keepAliveTimeout: 60_000 });
  const bodies: Body[] = files.map((f) => fileBody(f, opts.fields));
  const r: ApiResult = { rate: 0, units: 0, seconds: 0, passes: 0, documents: 0, failures: 0, answers: {}, samples: [] };
  try {
    const warm = Math.min(files.length, opts.warmup ?? opts.concurrency);
    if (warm > 0) {
      let units = 0;
      const seconds = await runAll(files.slice(0, warm), opts.concurrency, async (f, i) => {
        const o = await convert(pool, key, endpoint, bodies[i]!, { query: '?wait=60' });
        if (o.final === 'completed') units += opts.unit(f, o);
      });
      r.warm = { rate: units / seconds, documents: warm, seconds };
      // Then unmeasured passes until `warmSeconds` from the start (WARM_S in docpipe.ts, b-pdf.ts).
      for (let spent = seconds; spent < (opts.warmSeconds ?? 0);) {
        spent += await runAll(files, opts.concurrency, async (_f, i) => {
          await convert(pool, key, endpoint, bodies[i]!, { query: '?wait=60' });
        });
      }
    }
    do {
      r.seconds += await runAll(files, opts.concurrency, async (f, i) => {
        const o = await convert(pool, key, endpoint, bodies[i]!, { query: '?wait=60' });
        const tag = o.asyncReason ? `${o.status} ${o.asyncReason}` : String(o.status);
        r.answers[tag] = (r.answers[tag] ?? 0) + 1;
        r.documents++;
        if (o.final === 'completed') r.units += opts.unit(f, o);
        else {
          r.failures++;
          if (r.samples.length < 5) r.samples.push(`${f.name}: ${o.status} ${o.final} ${o.error ?? ''}`);
        }
      });
      r.passes++;
    } while (r.seconds < opts.minSeconds);
  } finally {
    await pool.close();
  }
  r.rate = r.units / r.seconds;
  return r;
}

/** Documents per second through a fresh docpipe process (started and stopped here), each
 *  document counting 1, at twice the pool's threads in flight. */
export async function docpipeDocuments(ctx: Ctx, label: string, endpoint: string, files: readonly CorpusFile[],
  minSeconds: number, warmSeconds = 0): Promise<ApiResult> {
  const inst = await ctx.bench.start();
  try {
    ctx.log(`${label}: docpipe`);
    return await apiThroughput(inst.origin, ctx.bench.key, endpoint, files, {
      concurrency: POOL_THREADS * 2, minSeconds, unit: () => 1, warmup: ctx.quick ? 0 : POOL_THREADS * 2, warmSeconds,
    });
  } finally {
    await inst.stop();
  }
}
