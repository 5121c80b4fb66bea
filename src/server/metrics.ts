// Prometheus metrics (GET /metrics, DESIGN.md §10). One Metrics object per running app, with its
// own registry (never prom-client's global one), so several servers in one process — as in the
// tests — each count only their own requests.
//
// What feeds what:
// - http_requests_*, http_request_duration_*: acceptor.ts, from the request-done callback (every
//   request, once); http_answers_held, http_answer_bytes_held: respond.ts (endWhenWritable), in
//   the Held each acceptor gives its requests, read at scrape time: answers waiting for clients.
// - pool_*: read from the Executor at scrape time (queued(); busy()/utilisation() when it has them).
// - conversion_tasks_*, pages_converted: meteredExecutor below, one count per source run.
// - conversions_total{kind,outcome}: for the conversion service to increment when a conversion
//   reaches its final status (outcome = completed | completed_with_errors | failed).
// - credits_*: meteredGate below, from the gate's own answers (reserved; charged and released at
//   settle/release, which the gate answers `settled` exactly once per conversion).
// - webhook_deliveries_total{outcome}: the webhook dispatcher, once per attempt
//   (outcome = delivered | retry | failed | disabled).
// - dependency_errors_total{dependency}: postgres | redis connection failures seen by requests,
//   readiness probes and the gate.
// Labels never carry account ids, keys or document names: only bounded sets of values.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Executor, Task } from '../jobs/executor.js';
import type { RunResult } from '../converters/registry.js';
import type { Gate } from '../billing/gate.js';
import type { Held } from './respond.js';

export type Dependency = 'postgres' | 'redis';

/** What the pool may expose beyond the Executor interface (src/pool/pool.ts does). */
interface PoolGauges {
  busy?(): number;
  utilisation?(): number;
  threads?: number;
}


const BY_ACCEPTOR = 'docpipe_http_requests_by_acceptor_total';

/** The sum of a metric's samples in a /metrics text, whatever their labels; NaN when it has none. */
export function metricSum(metricsText: string, name: string): number {
  const samples = [...metricsText.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))];
  return samples.length === 0 ? NaN : samples.reduce((a, m) => a + Number(m[1]), 0);
}

/** The requests each acceptor thread has answered, read from a /metrics text (by its number). */
export function requestsByAcceptor(metricsText: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const m of metricsText.matchAll(new RegExp(`^${BY_ACCEPTOR}\\{acceptor="(\\d+)"\\} (\\d+)$`, 'gm'))) out.set(Number(m[1]), Number(m[2]));
  return out;
}

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'docpipe_http_requests_total', help: 'HTTP requests answered, by route template and status.',
    labelNames: ['method', 'route', 'status'] as const, registers: [this.registry],
  });
  /** Requests by the acceptor (event loop) that served them: how connections spread over the
   *  acceptor threads (0 is the main thread's). */
  readonly acceptorRequests = new Counter({
    name: BY_ACCEPTOR, help: 'HTTP requests answered, by the acceptor thread that served them.',
    labelNames: ['acceptor'] as const, registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'docpipe_http_request_duration_seconds', help: 'Time from request to response, by route template and status.',
    labelNames: ['method', 'route', 'status'] as const, registers: [this.registry],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  });
  readonly conversions = new Counter({
    name: 'docpipe_conversions_total', help: 'Conversions that reached a final status, by kind and outcome.',
    labelNames: ['kind', 'outcome'] as const, registers: [this.registry],
  });
  readonly tasks = new Counter({
    name: 'docpipe_conversion_tasks_total', help: 'Sources run by the converters, by kind and outcome (completed, failed, cancelled).',
    labelNames: ['kind', 'outcome'] as const, registers: [this.registry],
  });
  readonly taskDuration = new Histogram({
    name: 'docpipe_conversion_task_duration_seconds', help: 'Time to convert one source, by kind.',
    labelNames: ['kind'] as const, registers: [this.registry],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
  });
  readonly pages = new Counter({
    name: 'docpipe_pages_converted_total', help: 'Pages (or slides, sheets, images) converted, by kind.',
    labelNames: ['kind'] as const, registers: [this.registry],
  });
  readonly creditsReserved = new Counter({
    name: 'docpipe_credits_reserved_total', help: 'Credits reserved at submit.', registers: [this.registry],
  });
  readonly creditsCharged = new Counter({
    name: 'docpipe_credits_charged_total', help: 'Credits charged at settle.', registers: [this.registry],
  });
  readonly creditsReleased = new Counter({
    name: 'docpipe_credits_released_total', help: 'Reserved credits given back (unused or failed work).', registers: [this.registry],
  });
  readonly webhookDeliveries = new Counter({
    name: 'docpipe_webhook_deliveries_total', help: 'Webhook delivery attempts, by outcome (delivered, retry, failed, disabled).',
    labelNames: ['outcome'] as const, registers: [this.registry],
  });
  readonly dependencyErrors = new Counter({
    name: 'docpipe_dependency_errors_total', help: 'Failures reaching Postgres or Redis, by dependency.',
    labelNames: ['dependency'] as const, registers: [this.registry],
  });

  /** This acceptor's number, as its requests are counted. */
  private readonly acceptor: string;

  constructor(opts: { executor?: Executor; defaults?: boolean; acceptor?: number } = {}) {
    this.acceptor = String(opts.acceptor ?? 0);
    const ex = opts.executor as (Executor & PoolGauges) | undefined;
    new Gauge({
      name: 'docpipe_pool_queue_depth', help: 'Conversion tasks waiting for a converter thread.',
      registers: [this.registry], collect() { this.set(ex?.queued() ?? 0); },
    });
    new Gauge({
      name: 'docpipe_pool_threads_busy', help: 'Converter threads running a task now.',
      registers: [this.registry], collect() { this.set(ex?.busy?.() ?? 0); },
    });
    new Gauge({
      name: 'docpipe_pool_threads', help: 'Converter threads in the pool (0 when conversions run inline).',
      registers: [this.registry], collect() { this.set(typeof ex?.threads === 'number' ? ex.threads : 0); },
    });
    new Gauge({
      name: 'docpipe_pool_utilisation', help: 'Busy converter threads as a share of all threads (0-1).',
      registers: [this.registry], collect() { this.set(ex?.utilisation?.() ?? 0); },
    });
    if (opts.defaults !== false) collectDefaultMetrics({ register: this.registry, prefix: 'docpipe_' });
  }

  /** Exposes the answers an app holds for clients that have not read them (respond.ts Held). */
  watchHeld(held: Held): void {
    new Gauge({
      name: 'docpipe_http_answers_held', help: 'Answers written but not yet taken by their clients (slow or stalled readers).',
      registers: [this.registry], collect() { this.set(held.answers); },
    });
    new Gauge({
      name: 'docpipe_http_answer_bytes_held', help: 'Bytes of the answers held for clients that have not read them.',
      registers: [this.registry], collect() { this.set(held.bytes); },
    });
  }

  /** Exposes the group commit's counts: conversions per transaction is their ratio. */
  watchGroupCommit(stats: { readonly batches: number; readonly conversions: number; readonly committingMs: number; readonly turnWaits: number; readonly turnWaitMs: number }): void {
    const counter = (name: string, help: string, read: () => number) => new Counter({
      name, help, registers: [this.registry],
      collect() { this.reset(); this.inc(read()); },
    });
    counter('docpipe_group_commit_batches_total', 'Group commits: transactions that stored the conversions submitted meanwhile (renders finished in their request, paid submits with their jobs).', () => stats.batches);
    counter('docpipe_group_commit_conversions_total', 'Conversions stored by those transactions.', () => stats.conversions);
    counter('docpipe_group_commit_seconds_total', 'Time batches spent from being taken to being settled (their transactions, retries included).', () => stats.committingMs / 1000);
    counter('docpipe_group_commit_turn_waits_total', "Batches that found the process's one commit at a time (several acceptor threads) taken by another, and waited for it.", () => stats.turnWaits);
    counter('docpipe_group_commit_turn_wait_seconds_total', 'Time those batches waited for the turn before being taken.', () => stats.turnWaitMs / 1000);
  }

  /** One answered (or abandoned) request; `route` must be a route template, never a raw path. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) };
    this.httpRequests.inc(labels);
    this.acceptorRequests.inc({ acceptor: this.acceptor });
    this.httpDuration.observe(labels, seconds);
  }

  /** Counts a connection-level failure of Postgres or Redis, when `err` is one. */
  noteDependencyError(err: unknown): void {
    const dep = dependencyOf(err);
    if (dep) this.dependencyErrors.inc({ dependency: dep });
  }

  async text(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}

/** Which dependency a thrown error comes from, when it is a connection failure. */
export function dependencyOf(err: unknown): Dependency | undefined {
  const e = err as { code?: unknown; name?: unknown; message?: unknown; port?: unknown } | null;
  if (!e || typeof e !== 'object') return undefined;
  const code = typeof e.code === 'string' ? e.code : '';
  const name = typeof e.name === 'string' ? e.name : '';
  const message = typeof e.message === 'string' ? e.message : '';
  if (code.startsWith('CONNECTION_') || code === 'CONNECT_TIMEOUT' || code === '57P01' || code === '57P03') return 'postgres';
  if (name === 'MaxRetriesPerRequestError' || /Connection is closed|Stream isn't writeable/.test(message)) return 'redis';
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'ETIMEDOUT') {
    if (e.port === 6379) return 'redis';
    if (e.port === 5432) return 'postgres';
  }
  return undefined;
}

/**
 * The same executor, counting what passes through `run`: tasks by kind and outcome, their
 * duration, and pages converted. A Proxy rather than a wrapper class, so every other method the
 * executor has (the pool's saturated(), busy(), ...) stays reachable as it is.
 */
export function meteredExecutor<T extends Executor>(inner: T, metrics: Metrics): T {
  const run: Executor['run'] = async (task: Task, signal, onProgress) => {
    const started = performance.now();
    try {
      const result: RunResult = await inner.run(task, signal, onProgress);
      metrics.tasks.inc({ kind: task.kind, outcome: 'completed' });
      metrics.pages.inc({ kind: task.kind }, result.pageCount);
      return result;
    } catch (err) {
      metrics.tasks.inc({ kind: task.kind, outcome: signal.aborted ? 'cancelled' : 'failed' });
      throw err;
    } finally {
      metrics.taskDuration.observe({ kind: task.kind }, (performance.now() - started) / 1000);
    }
  };
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === 'run') return run;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * The same billing gate, counting credits from its answers: reserved when a reserve succeeds,
 * charged and released (reserved − charged) when a settle or release settles, and Redis
 * failures of any call. A Proxy, so `instanceof` and the gate's own fields stay as they are.
 */
export function meteredGate<T extends Gate>(inner: T, metrics: Metrics): T {
  const watch = <A extends unknown[], R>(fn: (...a: A) => Promise<R>, count: (r: R, ...a: A) => void) =>
    async (...args: A): Promise<R> => {
      try {
        const r = await fn.apply(inner, args);
        count(r, ...args);
        return r;
      } catch (err) {
        if (dependencyOf(err) === 'redis') metrics.dependencyErrors.inc({ dependency: 'redis' });
        throw err;
      }
    };
  const settled = (r: Awaited<ReturnType<Gate['settle']>>): void => {
    if (!r.settled) return;
    metrics.creditsCharged.inc(r.charged);
    metrics.creditsReleased.inc(Math.max(0, r.reserved - r.charged));
  };
  const wrapped: Partial<Record<keyof Gate, unknown>> = {
    reserve: watch(inner.reserve, (r, req) => { if (r.kind === 'reserved') metrics.creditsReserved.inc(req.credits); }),
    settle: watch(inner.settle, settled),
    release: watch(inner.release, settled),
  };
  return new Proxy(inner, {
    get(target, prop) {
      if (typeof prop === 'string' && prop in wrapped) return wrapped[prop as keyof Gate];
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
