// The HTTP front end: builds the service's parts, registers every route of the API in one table
// and serves it with uWebSockets.js; runs the job runner, webhook dispatcher and retention sweeper.
import { createRequire } from 'node:module';
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { Config } from '../config.js';
import { openDb, type Db } from '../store/db.js';
import { Blobs } from '../store/blobs.js';
import { createLogger, type Logger } from '../log.js';
import { Authenticator } from './auth.js';
import { ConversionService } from '../jobs/service.js';
import { InlineExecutor, type Executor } from '../jobs/executor.js';
import { PoolExecutor } from '../pool/pool.js';
import { sweepScratch } from '../pool/scratch.js';
import { registerEvents } from './routes/events.js';
import { ApiError } from '../errors.js';
import { Router } from './router.js';
import { cleanUpNow, makeCtx, sendError, sendJson, sendProblem, type Ctx } from './respond.js';
import type { Deps } from './deps.js';
import { registerConvert } from './routes/convert.js';
import { registerConversions } from './routes/conversions.js';
import { registerUploads } from './routes/uploads.js';
import { Sweeper } from '../uploads/sweeper.js';
import { registerEstimate } from './routes/estimate.js';
import { registerOps } from './routes/ops.js';
import { registerWebhooks } from './routes/webhooks.js';
import { WebhookDispatcher } from '../webhooks/dispatcher.js';
import { Metrics, meteredExecutor, meteredGate } from '../metrics.js';
import type { Gate } from '../billing/gate.js';
import { RedisGate } from '../billing/redis-gate.js';
import { LocalGate } from '../billing/local-gate.js';
import { Ledger } from '../billing/ledger.js';
import { limitsFor } from '../billing/admission.js';
import type { Plan } from '../billing/plans.js';

type Uws = typeof import('uWebSockets.js');

/** Loads uWebSockets.js and refuses its silent pure-JS fallback: it is far slower. */
export function loadUws(): Uws {
  const require = createRequire(import.meta.url);
  const uws = require('uWebSockets.js') as Uws & { SSLApp?: unknown };
  if (typeof uws.SSLApp !== 'function' || process.env.UWS_USE_FALLBACK) {
    throw new Error('uWebSockets.js did not load its native binary for this platform/Node.js '
      + `(${process.platform}-${process.arch}, ABI ${process.versions.modules}); refusing the slow JS fallback.`);
  }
  return uws;
}

export interface RunningApp {
  port: number;
  deps: Deps;
  router: Router;
  /** This app's Prometheus registry and counters (GET /metrics). */
  metrics: Metrics;
  /** This process's webhook delivery loop. */
  webhooks: WebhookDispatcher;
  close(): Promise<void>;
}

export interface StartOptions {
  /** An already open database (tests share one per file); otherwise opened from config. */
  db?: Db;
  schema?: string;
  executor?: Executor;
  log?: Logger;
}


export async function startApp(config: Config, opts: StartOptions = {}): Promise<RunningApp> {
  const uws = loadUws();
  const log = opts.log ?? createLogger(config.logLevel);
  const db = opts.db ?? await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, schema: opts.schema ?? config.databaseSchema });
  const blobs = new Blobs(config.dataDir);
  // Scratch folders a killed process left: removed before this one runs any task.
  const swept = await sweepScratch(blobs.tmpDir, config.taskTimeoutS * 1000);
  if (swept > 0) log.warn({ mended: { folders: swept } }, 'scratch folders left by a stopped process removed');
  const settings = { tmpDir: blobs.tmpDir, allowPrivateNetwork: config.allowPrivateNetwork, ai: config.ai };
  // Documents are converted on the pool's threads; the event loop never parses one.
  const baseExecutor = opts.executor ?? new PoolExecutor(settings, {
    threads: config.poolThreads, taskTimeoutMs: config.taskTimeoutS * 1000, heapMb: config.workerHeapMb, nice: config.workerNice,
    onError: (err) => log.error({ err }, 'worker pool'),
  });

  const metrics = new Metrics({ executor: baseExecutor });
  const executor = meteredExecutor(baseExecutor, metrics);
  const inline = meteredExecutor(new InlineExecutor(settings), metrics);
  // The gate holds a rebuildable copy of the ledger: shared in Redis, or in this process alone.
  const gate: Gate = meteredGate(config.redisUrl
    ? new RedisGate({ redis: config.redisUrl, prefix: config.redisPrefix })
    : new LocalGate(), metrics);
  const ledger = new Ledger(db.sql, gate);
  const limits = (plan: Plan) => limitsFor(plan, config.planOverrides);
  const deps: Deps = {
    config, db, blobs, log, gate, ledger, limits, metrics,
    auth: new Authenticator(db.sql),
    conversions: new ConversionService(db.sql, blobs, executor, {
      gate, ledger, limits, onError: (err, what) => log.error({ err }, what),
      onMend: (what, counts) => log.warn({ mended: counts }, what),
    }, { inline, capacity: config.poolThreads * 2, mendMs: config.mendIntervalS * 1000, urlFetch: { allowPrivateNetwork: config.allowPrivateNetwork } }),
  };

  metrics.watchGroupCommit(deps.conversions.group.stats);

  const router = new Router();
  router.add('GET', '/healthz', (ctx) => sendJson(ctx, 200, { status: 'ok' }));
  router.add('GET', '/readyz', async (ctx) => {
    try {
      await db.sql`select 1`;
    } catch (err) {
      metrics.dependencyErrors.inc({ dependency: 'postgres' });
      sendProblem(ctx, 'service_unavailable', `Postgres is unreachable: ${(err as Error).message}`);
      return;
    }
    if (gate instanceof RedisGate) {
      try {
        // ioredis queues commands while it reconnects: do not let the probe wait on that.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          gate.redis.ping(),
          new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('no answer within 2 s')), 2000); }),
        ]).finally(() => clearTimeout(timer));
      } catch (err) {
        metrics.dependencyErrors.inc({ dependency: 'redis' });
        sendProblem(ctx, 'service_unavailable', `Redis is unreachable: ${(err as Error).message}`);
        return;
      }
      sendJson(ctx, 200, { status: 'ready', postgres: 'ok', redis: 'ok' });
      return;
    }
    sendJson(ctx, 200, { status: 'ready', postgres: 'ok' });
  });
  registerConvert(router, deps);
  registerEstimate(router, deps);
  registerConversions(router, deps);
  registerEvents(router, deps);
  registerUploads(router, deps);
  registerOps(router, metrics);
  // Webhook deliveries: every process runs the loop; SKIP LOCKED claims split the work.
  const webhooks = new WebhookDispatcher({
    sql: db.sql, log, allowPrivateNetwork: config.allowPrivateNetwork,
    timeScale: config.webhookTimeScale, timeoutMs: config.webhookTimeoutMs,
    onOutcome: (outcome) => metrics.webhookDeliveries.inc({ outcome }),
  });
  registerWebhooks(router, deps, webhooks);

  const app: TemplatedApp = uws.App();
  app.any('/*', (res, req) => {
    const ctx = makeCtx(res, req);
    ctx.onDone = (c) => {
      logRequest(log, c);
      metrics.observeRequest(c.method, c.route || 'unmatched', doneStatus(c), (performance.now() - c.startedAt) / 1000);
    };
    void dispatch(router, ctx, log, metrics);
  });

  const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
    app.listen(config.host, config.port, (sock) => (sock ? resolve(sock) : reject(new Error(`cannot listen on ${config.host}:${config.port}`))));
  });
  const port = uws.us_socket_local_port(listenSocket);
  // Retention: every process sweeps; SKIP LOCKED claims keep them from deleting twice.
  const sweeper = new Sweeper(db.sql, blobs, log, { intervalS: config.sweepIntervalS });
  sweeper.start();
  webhooks.start();
  deps.conversions.start();
  return {
    port,
    deps,
    router,
    metrics,
    webhooks,
    async close() {
      uws.us_listen_socket_close(listenSocket);
      // Running jobs may finish within the grace period; the rest go back to the job table.
      await deps.conversions.stop(config.shutdownGraceS * 1000);
      await sweeper.stop();
      await webhooks.stop();
      await executor.close();
      await gate.close();
      if (!opts.db) await db.close();
    },
  };
}

async function dispatch(router: Router, ctx: Ctx, log: Logger, metrics: Metrics): Promise<void> {
  try {
    const m = router.match(ctx.method, ctx.path);
    if ('allow' in m) {
      if (m.allow.length === 0) throw new ApiError('not_found', `No route ${ctx.method} ${ctx.path}.`);
      throw new ApiError('method_not_allowed', `${ctx.path} takes ${m.allow.join(', ')}.`, { allow: m.allow.join(', ') });
    }
    ctx.params = m.params;
    ctx.route = m.route.pattern;
    await m.route.handler(ctx);
  } catch (err) {
    metrics.noteDependencyError(err);
    await cleanUpNow(ctx);
    sendError(ctx, err, (e) => log.error({ err: e, request_id: ctx.requestId }, 'request failed'));
  }
}

/** The status a finished request is counted with: 499 when the client went away unanswered. */
function doneStatus(ctx: Ctx): number {
  return ctx.aborted && !ctx.answered ? 499 : ctx.status;
}

function logRequest(log: Logger, ctx: Ctx): void {
  if (!log.isLevelEnabled('info')) return;
  log.info({
    request_id: ctx.requestId,
    account_id: ctx.principal?.accountId,
    method: ctx.method,
    route: ctx.route || ctx.path,
    status: doneStatus(ctx),
    ms: Math.round((performance.now() - ctx.startedAt) * 10) / 10,
  }, 'request');
}
