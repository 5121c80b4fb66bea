import t from 'tap';
import { MODES, oneMode, PG_URL, startWorld } from '../helpers/world.js';
import { dependencyOf, Metrics, meteredExecutor, metricSum } from '../../src/server/metrics.js';
import { openDb } from '../../src/store/db.js';
import { startApp } from '../../src/server/app.js';
import { createLogger } from '../../src/log.js';
import type { Executor, Task } from '../../src/jobs/executor.js';
import type { RunResult } from '../../src/converters/registry.js';

/** The value of one sample line of a Prometheus text exposition, or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

for (const mode of oneMode()) {
  t.test(`GET /metrics (${mode})`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    const scrape = async (): Promise<string> => (await w.req('GET', '/metrics', { key: null })).text();

    await t.test('answers without a key in the Prometheus text format', async (t) => {
      const res = await w.req('GET', '/metrics', { key: null });
      t.equal(res.status, 200);
      t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
      const text = await res.text();
      for (const name of ['docpipe_pool_queue_depth', 'docpipe_pool_threads_busy', 'docpipe_pool_utilisation', 'docpipe_credits_charged_total']) {
        t.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name);
      }
      t.equal(sample(text, 'docpipe_pool_queue_depth'), 0);
    });

    await t.test('counts requests by route template and status, with latency', async (t) => {
      for (let i = 0; i < 3; i++) t.equal((await w.req('GET', '/v1/conversions')).status, 200);
      t.equal((await w.req('GET', '/v1/conversions/conv_missing')).status, 404);
      t.equal((await w.req('GET', '/no/such/path/secret-looking')).status, 404);
      const text = await scrape();
      t.equal(sample(text, 'docpipe_http_requests_total', { method: 'GET', route: '/v1/conversions', status: '200' }), 3);
      t.equal(sample(text, 'docpipe_http_requests_total', { method: 'GET', route: '/v1/conversions/:id', status: '404' }), 1);
      t.equal(sample(text, 'docpipe_http_requests_total', { route: 'unmatched', status: '404' }), 1);
      t.notMatch(text, 'secret-looking', 'raw paths never become labels');
      t.equal(sample(text, 'docpipe_http_request_duration_seconds_count', { route: '/v1/conversions', status: '200' }), 3);
      t.equal(sample(text, 'docpipe_http_request_duration_seconds_bucket', { route: '/v1/conversions', status: '200', le: '+Inf' }), 3);
    });

    await t.test('counts converted sources and pages by kind', async (t) => {
      const res = await w.req('POST', '/v1/convert/markdown/text', { json: { markdown: '# Title\n\nBody.' } });
      t.equal(res.status, 200);
      const text = await scrape();
      t.equal(sample(text, 'docpipe_conversion_tasks_total', { kind: 'markdown-text', outcome: 'completed' }), 1);
      t.ok((sample(text, 'docpipe_pages_converted_total', { kind: 'markdown-text' }) ?? -1) >= 0, 'pages are counted');
      t.equal(sample(text, 'docpipe_conversion_task_duration_seconds_count', { kind: 'markdown-text' }), 1);
      // The render was stored by a group commit, whose time is counted (one acceptor: no turn).
      t.ok((sample(text, 'docpipe_group_commit_batches_total') ?? 0) >= 1, 'a group commit stored it');
      t.ok((sample(text, 'docpipe_group_commit_seconds_total') ?? 0) > 0, 'its time from taken to settled is counted');
      t.equal(sample(text, 'docpipe_group_commit_turn_waits_total'), 0, 'one acceptor has no turn to wait for');
      t.equal(sample(text, 'docpipe_group_commit_turn_wait_seconds_total'), 0);
    });

    await t.test('counts credits reserved, charged and released through the gate', async (t) => {
      const before = await scrape();
      const ok = await w.req('POST', '/v1/convert/text', { json: { texts: ['one', 'two'] } });
      t.equal(ok.status, 200);
      const usage = (await ok.json() as { usage: { credits_reserved: number; credits_charged: number } }).usage;
      t.ok(usage.credits_reserved > 0, 'the conversion cost something');
      const after = await scrape();
      const delta = (name: string): number => (sample(after, name) ?? 0) - (sample(before, name) ?? 0);
      t.equal(delta('docpipe_credits_reserved_total'), usage.credits_reserved);
      t.equal(delta('docpipe_credits_charged_total'), usage.credits_charged);
      t.equal(delta('docpipe_credits_released_total'), usage.credits_reserved - usage.credits_charged);
    });
  });
}

t.test('readiness', { skip: MODES.includes('postgres') ? false : 'needs the postgres mode' }, async (t) => {
  const w = await startWorld('postgres', {}, { redis: true });
  t.teardown(() => w.close());

  await t.test('is 503 service_unavailable while Redis does not answer', async (t) => {
    t.match(await (await w.req('GET', '/readyz', { key: null })).json(), { status: 'ready', postgres: 'ok', redis: 'ok' });
    const redis = (w.app.deps.gate as unknown as { redis: { ping: () => Promise<string> } }).redis;
    const ping = redis.ping;
    redis.ping = () => Promise.reject(new Error('Connection is closed.'));
    t.teardown(() => { redis.ping = ping; });
    const res = await w.req('GET', '/readyz', { key: null });
    t.equal(res.status, 503);
    t.match(await res.json(), { error: 'service_unavailable', retryable: true });
    t.equal(sample(await w.app.metrics.text().then((m) => m.body), 'docpipe_dependency_errors_total', { dependency: 'redis' }), 1);
    redis.ping = ping;
    t.equal((await w.req('GET', '/readyz', { key: null })).status, 200, 'ready again once Redis answers');
  });

  await t.test('is 503 service_unavailable once Postgres is gone', async (t) => {
    const [{ search_path: schema }] = await w.db.sql`show search_path` as unknown as Array<{ search_path: string }>;
    const db = await openDb({ databaseUrl: PG_URL, dataDir: w.dataDir, schema: schema!.replace(/"/g, ''), max: 1 });
    const app = await startApp(w.config, { db, log: createLogger('silent') });
    t.teardown(() => app.close());
    const url = `http://127.0.0.1:${app.port}/readyz`;
    t.equal((await fetch(url)).status, 200);
    await db.close();
    const res = await fetch(url);
    t.equal(res.status, 503);
    t.match(await res.json(), { error: 'service_unavailable' });
    t.equal((await fetch(`http://127.0.0.1:${app.port}/healthz`)).status, 200, 'the process itself is still up');
  });
});

t.test('each app has its own registry', async (t) => {
  const a = new Metrics();
  const b = new Metrics();
  a.observeRequest('GET', '/healthz', 200, 0.001);
  t.equal(sample((await a.text()).body, 'docpipe_http_requests_total', { route: '/healthz' }), 1);
  t.equal(sample((await b.text()).body, 'docpipe_http_requests_total', { route: '/healthz' }), undefined);
});

t.test('the metered executor counts outcomes and keeps the executor\'s own methods', async (t) => {
  class Fake implements Executor {
    threads = 4;
    async run(task: Task, signal: AbortSignal): Promise<RunResult> {
      if (signal.aborted) throw new Error('aborted');
      if (task.name === 'bad') throw new Error('broken');
      return { outputs: [], pageCount: 7, variant: 'standard' };
    }
    queued(): number { return 3; }
    busy(): number { return 2; }
    utilisation(): number { return 0.5; }
    saturated(): boolean { return true; }
    async close(): Promise<void> {}
  }
  const m = new Metrics({ defaults: false });
  const fake = new Fake();
  const ex = meteredExecutor(fake, m);
  const task = (name: string): Task => ({ kind: 'pdf', path: '/nowhere', name, options: { formats: ['markdown'] } });
  await ex.run(task('ok'), new AbortController().signal);
  await t.rejects(ex.run(task('bad'), new AbortController().signal));
  const ctrl = new AbortController();
  ctrl.abort();
  await t.rejects(ex.run(task('ok'), ctrl.signal));
  t.ok(ex instanceof Fake, 'still an instance of its class');
  t.equal(ex.saturated(), true, 'methods beyond Executor pass through');
  const metrics = new Metrics({ executor: ex, defaults: false });
  const text = (await m.text()).body;
  t.equal(sample(text, 'docpipe_conversion_tasks_total', { kind: 'pdf', outcome: 'completed' }), 1);
  t.equal(sample(text, 'docpipe_conversion_tasks_total', { kind: 'pdf', outcome: 'failed' }), 1);
  t.equal(sample(text, 'docpipe_conversion_tasks_total', { kind: 'pdf', outcome: 'cancelled' }), 1);
  t.equal(sample(text, 'docpipe_pages_converted_total', { kind: 'pdf' }), 7);
  const pool = (await metrics.text()).body;
  t.equal(sample(pool, 'docpipe_pool_queue_depth'), 3);
  t.equal(sample(pool, 'docpipe_pool_threads_busy'), 2);
  t.equal(sample(pool, 'docpipe_pool_utilisation'), 0.5);
  t.equal(sample(pool, 'docpipe_pool_threads'), 4);
});

t.test('connection failures are told apart by dependency', async (t) => {
  t.equal(dependencyOf(Object.assign(new Error('x'), { code: 'CONNECTION_CLOSED' })), 'postgres');
  t.equal(dependencyOf(Object.assign(new Error('x'), { code: '57P01' })), 'postgres');
  t.equal(dependencyOf(new Error('Connection is closed.')), 'redis');
  t.equal(dependencyOf(Object.assign(new Error('x'), { code: 'ECONNREFUSED', port: 6379 })), 'redis');
  t.equal(dependencyOf(new Error('some bug')), undefined);
  t.equal(dependencyOf('not an error'), undefined);
});

t.test('a metric read from a /metrics text sums its samples, whatever their labels', async (t) => {
  const text = [
    '# HELP docpipe_x_total Things.', '# TYPE docpipe_x_total counter',
    'docpipe_x_total{acceptor="0"} 3', 'docpipe_x_total{acceptor="1"} 4',
    'docpipe_x_total_other 100', 'docpipe_lag_seconds 0.0125',
  ].join('\n');
  t.equal(metricSum(text, 'docpipe_x_total'), 7, 'labelled samples added, a longer name sharing the prefix left out');
  t.equal(metricSum(text, 'docpipe_lag_seconds'), 0.0125, 'an unlabelled gauge, fractions kept');
  t.ok(Number.isNaN(metricSum(text, 'docpipe_missing')), 'a metric with no sample is NaN, not 0');
});
