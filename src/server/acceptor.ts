// One acceptor: every route of the API served by one uWebSockets.js app on one event loop, with
// the dependencies it answers from (its own database and Redis connections, key cache, group
// commit). The process's main thread runs acceptor 0 and each acceptor thread one more
// (acceptors.ts); all listen on the same port, and Linux spreads the connections across them
// (SO_REUSEPORT, which uWS sets). What is one per process (the converter pool, the job runner,
// the gate audit, the webhook dispatcher, an in-process gate) is handed in: the real thing in
// the main thread, its link in an acceptor thread (acceptor-link.ts).
import { CommitTurn } from '../jobs/commit-turn.js';
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { Config } from '../config.js';
import type { Db } from '../store/db.js';
import type { Blobs } from '../store/blobs.js';
import type { Logger } from '../log.js';
import { ApiError } from '../errors.js';
import { Authenticator } from './auth.js';
import { ConversionService } from '../jobs/service.js';
import type { AuditWatch, JobStarter } from '../jobs/context.js';
import type { Executor } from '../jobs/executor.js';
import { Router } from './router.js';
import { cleanUpNow, makeCtx, sendError, sendJson, sendProblem, type Ctx, type Held } from './respond.js';
import type { Deps } from './deps.js';
import { registerConvert } from './routes/convert.js';
import { registerConversions } from './routes/conversions.js';
import { registerEvents } from './routes/events.js';
import { registerUploads } from './routes/uploads.js';
import { registerEstimate } from './routes/estimate.js';
import { registerOps } from './routes/ops.js';
import { registerWebhooks } from './routes/webhooks.js';
import type { Sender } from '../webhooks/deliver.js';
import { meteredExecutor, type Metrics } from './metrics.js';
import type { Gate } from '../billing/gate.js';
import { RedisGate } from '../billing/redis-gate.js';
import { Ledger } from '../billing/ledger.js';
import { limitsFor } from '../billing/admission.js';
import type { Plan } from '../plans.js';
import { InlineExecutor } from '../jobs/executor.js';
import type { MetricsText } from './acceptor-link.js';
import { loadUws } from './uws.js';
import { warmUp } from '../converters/shared/markdown.js';

export interface AcceptorParts {
  config: Config;
  db: Db;
  blobs: Blobs;
  log: Logger;
  /** The gate, already metered into `metrics`. */
  gate: Gate;
  /** Where jobs run and sources are counted: the pool (main thread) or its link. */
  executor: Executor;
  /** This acceptor's own counters. */
  metrics: Metrics;
  /** The process's metrics, every acceptor's added up (GET /metrics). */
  metricsText(): Promise<MetricsText>;
  /** Sends a webhook endpoint's test event (POST /v1/webhooks/{id}/test). */
  sender: Sender;
  /** An acceptor thread's link to the process's job runner and gate audit. */
  linked?: { runner: JobStarter; audit: AuditWatch };
  /** Shared memory for the process's one group commit at a time (jobs/commit-turn.ts), when it
   *  has several acceptors. */
  commitTurn?: SharedArrayBuffer;
  /** Whether the process has started every acceptor: until then /readyz answers 503, so that a
   *  load balancer (or the bench) does not load a process whose other threads do not listen
   *  yet, every connection of that load on this one thread for as long as it lasts. */
  started?: () => boolean;
}

export interface Acceptor {
  port: number;
  deps: Deps;
  router: Router;
  /** Closes the listening socket; open connections are still served. */
  stopListening(): void;
  /** Settles once no request is in flight on this acceptor, or after `ms`. */
  idle(ms: number): Promise<void>;
  /**
   * Closes every connection still open (idle keep-alive ones included). A thread must do this
   * before it ends: a uWS socket left open aborts Node.js when the thread's loop is closed.
   */
  closeConnections(): void;
}

export async function startAcceptor(parts: AcceptorParts): Promise<Acceptor> {
  const { config, db, blobs, log, gate, metrics } = parts;
  const settings = { tmpDir: blobs.tmpDir, allowPrivateNetwork: config.allowPrivateNetwork, ai: config.ai };
  const executor = meteredExecutor(parts.executor, metrics);
  // Small Markdown renders run on this event loop (see jobs/context.ts for why that is safe).
  const inline = meteredExecutor(new InlineExecutor(settings), metrics);
  const ledger = new Ledger(db.sql, gate);
  const limits = (plan: Plan) => limitsFor(plan, config.planOverrides);
  const deps: Deps = {
    config, db, blobs, log, gate, ledger, limits, metrics,
    auth: new Authenticator(db.sql),
    conversions: new ConversionService(db.sql, blobs, executor, {
      gate, ledger, limits, onError: (err, what) => log.error({ err }, what),
      onMend: (what, counts) => log.warn({ mended: counts }, what),
    }, {
      inline, capacity: config.poolThreads * 2, mendMs: config.mendIntervalS * 1000,
      urlFetch: { allowPrivateNetwork: config.allowPrivateNetwork }, linked: parts.linked,
      commitTurn: parts.commitTurn && new CommitTurn(parts.commitTurn),
    }),
  };
  metrics.watchGroupCommit(deps.conversions.group.stats);
  const held: Held = { answers: 0, bytes: 0 };
  metrics.watchHeld(held);

  const router = new Router();
  router.add('GET', '/healthz', (ctx) => sendJson(ctx, 200, { status: 'ok' }));
  router.add('GET', '/readyz', (ctx) => ready(ctx, deps, parts.started));
  registerConvert(router, deps);
  registerEstimate(router, deps);
  registerConversions(router, deps);
  registerEvents(router, deps);
  registerUploads(router, deps);
  registerOps(router, parts.metricsText);
  registerWebhooks(router, deps, parts.sender);

  const uws = loadUws();
  let inFlight = 0;
  let onIdle: (() => void) | undefined;
  const app: TemplatedApp = uws.App();
  app.any('/*', (res, req) => {
    const ctx = makeCtx(res, req, held);
    inFlight++;
    ctx.onDone = (c) => {
      logRequest(log, c);
      metrics.observeRequest(c.method, c.route || 'unmatched', doneStatus(c), (performance.now() - c.startedAt) / 1000);
      if (--inFlight === 0) onIdle?.();
    };
    void dispatch(router, ctx, log, metrics);
  });
  // The thread's Markdown renderer compiled before it accepts: its first render would take tens
  // of milliseconds (see warmUp).
  warmUp();
  const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
    app.listen(config.host, config.port, (sock) => (sock ? resolve(sock) : reject(new Error(`cannot listen on ${config.host}:${config.port}`))));
  });
  let listening = true;
  return {
    port: uws.us_socket_local_port(listenSocket),
    deps,
    router,
    stopListening() {
      if (listening) uws.us_listen_socket_close(listenSocket);
      listening = false;
    },
    async idle(ms) {
      if (inFlight === 0) return;
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        onIdle = resolve;
        timer = setTimeout(resolve, ms);
      });
      clearTimeout(timer);
      onIdle = undefined;
    },
    closeConnections() {
      listening = false;
      // Present in this uWS build, missing from its typings: closes the listen and every open socket.
      (app as TemplatedApp & { close(): void }).close();
    },
  };
}

/** GET /readyz: the process started, and Postgres, and Redis when the gate is there, reachable
 *  from this acceptor. */
async function ready(ctx: Ctx, deps: Deps, started?: () => boolean): Promise<void> {
  if (started && !started()) {
    sendProblem(ctx, 'service_unavailable', 'The server is starting: not every acceptor thread listens yet.');
    return;
  }
  try {
    await deps.db.sql`select 1`;
  } catch (err) {
    deps.metrics.dependencyErrors.inc({ dependency: 'postgres' });
    sendProblem(ctx, 'service_unavailable', `Postgres is unreachable: ${(err as Error).message}`);
    return;
  }
  const gate = deps.gate;
  if (gate instanceof RedisGate) {
    try {
      // ioredis queues commands while it reconnects: do not let the probe wait on that.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        gate.redis.ping(),
        new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('no answer within 2 s')), 2000); }),
      ]).finally(() => clearTimeout(timer));
    } catch (err) {
      deps.metrics.dependencyErrors.inc({ dependency: 'redis' });
      sendProblem(ctx, 'service_unavailable', `Redis is unreachable: ${(err as Error).message}`);
      return;
    }
    sendJson(ctx, 200, { status: 'ready', postgres: 'ok', redis: 'ok' });
    return;
  }
  sendJson(ctx, 200, { status: 'ready', postgres: 'ok' });
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
