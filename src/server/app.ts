// The HTTP front end: builds the service's parts, registers every route of the API in one table
// and serves it with uWebSockets.js. Routes whose issue has not landed answer 501 problem+json.
import { createRequire } from 'node:module';
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { Config } from '../config.js';
import { openDb, type Db } from '../store/db.js';
import { Blobs } from '../store/blobs.js';
import { createLogger, type Logger } from '../log.js';
import { Authenticator } from './auth.js';
import { ConversionService } from '../jobs/service.js';
import { InlineExecutor, type Executor } from '../jobs/executor.js';
import { ApiError } from '../errors.js';
import { Router } from './router.js';
import { makeCtx, sendError, sendJson, sendProblem, type Ctx } from './respond.js';
import type { Deps } from './deps.js';
import { registerConvert } from './routes/convert.js';
import { registerConversions } from './routes/conversions.js';

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
  close(): Promise<void>;
}

export interface StartOptions {
  /** An already open database (tests share one per file); otherwise opened from config. */
  db?: Db;
  schema?: string;
  executor?: Executor;
  log?: Logger;
}

/** Paths of the API that exist in the spec but are not served by this build yet. */
const NOT_YET: Array<[string, string]> = [
  ['GET', '/metrics'],
  ['GET', '/v1/openapi.json'],
  ['GET', '/v1/conversions/:id/events'],
  ['POST', '/v1/uploads'],
  ['GET', '/v1/uploads/:id'],
  ['PUT', '/v1/uploads/:id/parts/:number'],
  ['POST', '/v1/uploads/:id/complete'],
  ['POST', '/v1/webhooks'],
  ['GET', '/v1/webhooks'],
  ['DELETE', '/v1/webhooks/:id'],
  ['GET', '/v1/webhooks/:id/deliveries'],
  ['POST', '/v1/webhooks/:id/test'],
];

export async function startApp(config: Config, opts: StartOptions = {}): Promise<RunningApp> {
  const uws = loadUws();
  const log = opts.log ?? createLogger(config.logLevel);
  const db = opts.db ?? await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, schema: opts.schema ?? config.databaseSchema });
  const blobs = new Blobs(config.dataDir);
  const executor = opts.executor ?? new InlineExecutor({
    tmpDir: blobs.tmpDir, allowPrivateNetwork: config.allowPrivateNetwork, ai: config.ai,
  });
  const deps: Deps = {
    config, db, blobs, log,
    auth: new Authenticator(db.sql),
    conversions: new ConversionService(db.sql, blobs, executor),
  };

  const router = new Router();
  router.add('GET', '/healthz', (ctx) => sendJson(ctx, 200, { status: 'ok' }));
  router.add('GET', '/readyz', async (ctx) => {
    try {
      await db.sql`select 1`;
      sendJson(ctx, 200, { status: 'ready', postgres: 'ok' });
    } catch (err) {
      sendProblem(ctx, 'service_unavailable', `Postgres is unreachable: ${(err as Error).message}`);
    }
  });
  registerConvert(router, deps);
  for (const kindPath of router.list().filter((r) => r.pattern.startsWith('/v1/convert/')).map((r) => r.pattern)) {
    router.add('POST', `${kindPath}/estimate`, notYet);
  }
  registerConversions(router, deps);
  for (const [method, pattern] of NOT_YET) router.add(method, pattern, notYet);

  const app: TemplatedApp = uws.App();
  app.any('/*', (res, req) => {
    const ctx = makeCtx(res, req);
    ctx.onDone = (c) => logRequest(log, c);
    void dispatch(router, ctx, log);
  });

  const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
    app.listen(config.host, config.port, (sock) => (sock ? resolve(sock) : reject(new Error(`cannot listen on ${config.host}:${config.port}`))));
  });
  const port = uws.us_socket_local_port(listenSocket);
  return {
    port,
    deps,
    router,
    async close() {
      uws.us_listen_socket_close(listenSocket);
      await executor.close();
      if (!opts.db) await db.close();
    },
  };
}

function notYet(): never {
  throw new ApiError('not_implemented', 'This endpoint is not available in this build yet.');
}

async function dispatch(router: Router, ctx: Ctx, log: Logger): Promise<void> {
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
    sendError(ctx, err, (e) => log.error({ err: e, request_id: ctx.requestId }, 'request failed'));
  }
}

function logRequest(log: Logger, ctx: Ctx): void {
  if (!log.isLevelEnabled('info')) return;
  log.info({
    request_id: ctx.requestId,
    account_id: ctx.principal?.accountId,
    method: ctx.method,
    route: ctx.route || ctx.path,
    status: ctx.aborted && !ctx.answered ? 499 : ctx.status,
    ms: Math.round((performance.now() - ctx.startedAt) * 10) / 10,
  }, 'request');
}
