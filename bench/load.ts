// The bench's load generator (our own, not autocannon): an undici Pool with N keep-alive
// connections driven either closed-loop (N workers, each sends its next request when the last
// answered, for a fixed duration) or open-loop (requests fired on a fixed schedule; latency is
// counted from the scheduled time, so a stalled server cannot hide its queue — no coordinated
// omission). Latencies go into a log-bucket histogram (1 % resolution) → req/s, p50, p99.
// Every ratio in the bench compares numbers taken with this one generator in one run.
import { Worker } from 'node:worker_threads';
import { Pool } from 'undici';

/** Latencies in microseconds, in buckets 1 % wide; exact count, min, max and mean. */
export class Histogram {
  private static readonly GROWTH = Math.log(1.01);
  private readonly buckets = new Float64Array(2400);
  count = 0;
  min = Infinity;
  max = 0;
  private sum = 0;

  record(ms: number): void {
    const us = Math.max(1, ms * 1000);
    const i = Math.min(this.buckets.length - 1, Math.floor(Math.log(us) / Histogram.GROWTH));
    this.buckets[i]!++;
    this.count++;
    this.sum += ms;
    if (ms < this.min) this.min = ms;
    if (ms > this.max) this.max = ms;
  }

  /** The latency (ms) under which `q` (0–1) of the samples fall; upper edge of its bucket. */
  quantile(q: number): number {
    if (this.count === 0) return NaN;
    const rank = Math.ceil(q * this.count);
    let seen = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      seen += this.buckets[i]!;
      if (seen >= rank) return Math.min(this.max, Math.exp((i + 1) * Histogram.GROWTH) / 1000);
    }
    return this.max;
  }

  mean(): number {
    return this.count ? this.sum / this.count : NaN;
  }
}

export interface Req {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
}

export interface LoadResult {
  /** Answers counted as successes per second of the measured window. */
  rps: number;
  ok: number;
  /** Answers by status code (all of them, successes included). */
  statuses: Record<string, number>;
  /** Requests that got no answer (connection errors, resets). */
  errors: number;
  /** First few unexpected answers, for the log. */
  samples: string[];
  p50: number;
  p99: number;
  max: number;
  mean: number;
  seconds: number;
  histogram: Histogram;
}

export interface Answer {
  status: number;
  /** The body text when `keepBody` asked for it, else ''. */
  body: string;
}

export interface LoadOptions {
  origin: string;
  connections: number;
  /** Builds the i-th request. */
  request: (i: number) => Req;
  /** Which answers count as successes (default: 2xx). */
  ok?: (a: Answer) => boolean;
  /** Read the body of every answer (to judge it in `ok`); otherwise bodies are discarded. */
  keepBody?: boolean;
  /** Called on every answer (successes and failures alike). */
  onAnswer?: (a: Answer) => void;
}

function newResult(): Omit<LoadResult, 'rps' | 'p50' | 'p99' | 'max' | 'mean' | 'seconds'> {
  return { ok: 0, statuses: {}, errors: 0, samples: [], histogram: new Histogram() };
}

function finish(r: ReturnType<typeof newResult>, seconds: number): LoadResult {
  const h = r.histogram;
  return { ...r, rps: r.ok / seconds, seconds, p50: h.quantile(0.5), p99: h.quantile(0.99), max: h.max, mean: h.mean() };
}

async function send(pool: Pool, req: Req, opts: LoadOptions, r: ReturnType<typeof newResult>, since: number): Promise<void> {
  try {
    const res = await pool.request({ method: req.method as 'GET', path: req.path, headers: req.headers, body: req.body });
    const isOk = opts.ok ?? ((a: Answer) => a.status >= 200 && a.status < 300);
    let body = '';
    if (opts.keepBody || res.statusCode >= 400) body = await res.body.text();
    else await res.body.dump();
    const answer = { status: res.statusCode, body };
    r.histogram.record(performance.now() - since);
    r.statuses[res.statusCode] = (r.statuses[res.statusCode] ?? 0) + 1;
    opts.onAnswer?.(answer);
    if (isOk(answer)) r.ok++;
    else if (r.samples.length < 5) r.samples.push(`${res.statusCode} ${body.slice(0, 300)}`);
  } catch (err) {
    r.errors++;
    if (r.samples.length < 5) r.samples.push(`error: ${(err as Error).message}`);
  }
}

/** N workers, each with one request in flight, for `durationMs`. */
export async function closedLoop(opts: LoadOptions & { durationMs: number }): Promise<LoadResult> {
  const pool = new Pool(opts.origin, { connections: opts.connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const r = newResult();
  let i = 0;
  const start = performance.now();
  const end = start + opts.durationMs;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const req = opts.request(i++);
      await send(pool, req, opts, r, performance.now());
    }
  };
  await Promise.all(Array.from({ length: opts.connections }, worker));
  const seconds = (performance.now() - start) / 1000;
  await pool.close();
  return finish(r, seconds);
}

/** `rate` requests per second on schedule for `durationMs`, over up to `connections` sockets. */
export async function openLoop(opts: LoadOptions & { durationMs: number; rate: number }): Promise<LoadResult> {
  const pool = new Pool(opts.origin, { connections: opts.connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const r = newResult();
  const start = performance.now();
  const total = Math.max(1, Math.floor((opts.rate * opts.durationMs) / 1000));
  const inflight = new Set<Promise<void>>();
  let i = 0;
  while (i < total) {
    const now = performance.now();
    while (i < total && start + (i * 1000) / opts.rate <= now) {
      const due = start + (i * 1000) / opts.rate;
      const p = send(pool, opts.request(i), opts, r, due).finally(() => inflight.delete(p));
      inflight.add(p);
      i++;
    }
    if (i < total) {
      const next = start + (i * 1000) / opts.rate;
      await new Promise((res) => setTimeout(res, Math.max(0, Math.min(50, next - performance.now()))));
    }
  }
  await Promise.all(inflight);
  const seconds = Math.max(opts.durationMs, performance.now() - start) / 1000;
  await pool.close();
  return finish(r, seconds);
}

/** An open loop of one fixed request, run in a thread of its own (openLoopInThread). */
export interface ThreadLoad {
  origin: string;
  connections: number;
  durationMs: number;
  rate: number;
  request: Req;
  /** The status counted as a success. */
  okStatus: number;
}

/** What openLoopInThread answers: openLoop's result without the histogram, with the number of
 *  answers timed and the thread's own event-loop delay. */
export interface ThreadLoadResult extends Omit<LoadResult, 'histogram'> {
  count: number;
  ownDelay: { p99Ms: number; maxMs: number };
}

/**
 * openLoop on an event loop of its own: a worker thread of this process. A probe timed on the
 * loop that also drives a heavy load shares its stalls (scenario E once read a probe p99 of 144 ms
 * in a run where its generator's own event loop stood still for 113 ms).
 */
export function openLoopInThread(load: ThreadLoad): Promise<ThreadLoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./probe-thread-tsx.mjs', import.meta.url), { workerData: load });
    let answer: ThreadLoadResult | undefined;
    worker.once('message', (m: ThreadLoadResult) => { answer = m; });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (answer) resolve(answer);
      else reject(new Error(`the load thread ended (code ${code}) without a result`));
    });
  });
}

/** The rate of one pass over a corpus (a warm-up pass, reported beside the measured ones). */
export interface PassRate { rate: number; documents: number; seconds: number }

/** Runs `items` once each, `concurrency` at a time; resolves with the wall time in seconds. */
export async function runAll<T>(items: readonly T[], concurrency: number, each: (item: T, index: number) => Promise<void>): Promise<number> {
  let next = 0;
  const start = performance.now();
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const k = next++;
      await each(items[k]!, k);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
  return (performance.now() - start) / 1000;
}
