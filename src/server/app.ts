// The server process: builds what is one per process (the database and gate of the main
// thread, the converter pool, the job runner, the webhook dispatcher, the retention sweeper, the
// mending sweeps) and serves the API on HTTP_THREADS event loops: the main thread's acceptor and
// the acceptor threads (acceptors.ts), all on one port.
import { commitTurnBuffer } from '../jobs/commit-turn.js';
import type { Config } from '../config.js';
import { openDb, type Db } from '../store/db.js';
import { Blobs } from '../store/blobs.js';
import { createLogger, type Logger } from '../log.js';
import type { Executor } from '../jobs/executor.js';
import { PoolExecutor } from '../pool/pool.js';
import { sweepScratch } from '../pool/scratch.js';
import type { Router } from './router.js';
import type { Deps } from './deps.js';
import { Sweeper } from '../uploads/sweeper.js';
import { WebhookDispatcher } from '../webhooks/dispatcher.js';
import { Metrics, meteredGate } from './metrics.js';
import type { Gate } from '../billing/gate.js';
import { RedisGate } from '../billing/redis-gate.js';
import { LocalGate } from '../billing/local-gate.js';
import { startAcceptor } from './acceptor.js';
import { AcceptorHub, poolStateBuffer } from './acceptor-link.js';
import { extraAcceptors, portFor, startAcceptorThreads, type AcceptorThreads } from './acceptors.js';

export { loadUws } from './uws.js';

export interface RunningApp {
  port: number;
  /** The main thread's acceptor's dependencies. */
  deps: Deps;
  router: Router;
  /** The main thread's Prometheus registry and counters (GET /metrics adds up every acceptor's). */
  metrics: Metrics;
  /** This process's webhook delivery loop. */
  webhooks: WebhookDispatcher;
  /** Event loops serving HTTP: the main thread's and the acceptor threads. */
  acceptors: number;
  close(): Promise<void>;
}

export interface StartOptions {
  /** An already open database (tests share one per file); otherwise opened from config. */
  db?: Db;
  schema?: string;
  executor?: Executor;
  log?: Logger;
}

/** How long, after the jobs are settled or handed back, a stopping server waits for its
 *  requests in flight to be answered. */
const ANSWER_GRACE_MS = 5_000;

export async function startApp(config: Config, opts: StartOptions = {}): Promise<RunningApp> {
  const log = opts.log ?? createLogger(config.logLevel);
  const db = opts.db ?? await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, schema: opts.schema ?? config.databaseSchema });
  const blobs = new Blobs(config.dataDir);
  // Scratch folders a killed process left: removed before this one runs any task.
  const swept = await sweepScratch(blobs.tmpDir, config.taskTimeoutS * 1000);
  if (swept > 0) log.warn({ mended: { folders: swept } }, 'scratch folders left by a stopped process removed');
  const settings = { tmpDir: blobs.tmpDir, allowPrivateNetwork: config.allowPrivateNetwork, ai: config.ai };
  // Documents are converted on the pool's threads; no event loop parses one.
  const executor = opts.executor ?? new PoolExecutor(settings, {
    threads: config.poolThreads, taskTimeoutMs: config.taskTimeoutS * 1000, heapMb: config.workerHeapMb, youngMb: config.workerYoungMb, nice: config.workerNice, schedIdle: config.workerSchedIdle,
    onError: (err) => log.error({ err }, 'worker pool'),
  });
  const metrics = new Metrics({ executor, acceptor: 0 });
  // The gate holds a rebuildable copy of the ledger: shared in Redis, or in this process alone.
  const gate: Gate = meteredGate(config.redisUrl
    ? new RedisGate({ redis: config.redisUrl, prefix: config.redisPrefix })
    : new LocalGate(), metrics);
  // Webhook deliveries: every process runs the loop; SKIP LOCKED claims split the work.
  const webhooks = new WebhookDispatcher({
    sql: db.sql, log, allowPrivateNetwork: config.allowPrivateNetwork,
    timeScale: config.webhookTimeScale, timeoutMs: config.webhookTimeoutMs,
    onOutcome: (outcome) => metrics.webhookDeliveries.inc({ outcome }),
  });

  const extra = extraAcceptors(config, db.embedded, log);
  const hub = extra > 0 ? new AcceptorHub({
    executor, wake: () => webhooks.wake(), gate: config.redisUrl ? undefined : gate,
    metrics: () => metrics.registry.getMetricsAsJSON(), contentType: metrics.registry.contentType,
  }, poolStateBuffer()) : undefined;
  // With several acceptors, their group commits take turns (jobs/commit-turn.ts).
  const commitTurn = hub ? commitTurnBuffer() : undefined;
  let started = false;
  const acceptor = await startAcceptor({
    config: hub ? { ...config, port: await portFor(config) } : config, db, blobs, log, gate, executor, metrics, sender: webhooks.sender, commitTurn,
    metricsText: () => (hub ? hub.metricsText() : metrics.text()),
    started: () => started,
  });
  const { deps } = acceptor;
  let threads: AcceptorThreads | undefined;
  let unfollow: (() => void) | undefined;
  if (hub) {
    hub.serve({ runner: deps.conversions.runner!, audit: deps.conversions.audit });
    // The acceptors read whether the pool is saturated from memory this thread keeps current.
    unfollow = hub.follow();
    try {
      threads = await startAcceptorThreads(extra, config, acceptor.port, hub, {
        owner: deps.conversions.runner!.owner, sharedGate: !config.redisUrl, commitTurn, log,
      });
    } catch (err) {
      acceptor.stopListening();
      unfollow?.();
      await Promise.allSettled([executor.close(), gate.close(), webhooks.sender.close()]);
      if (!opts.db) await db.close();
      throw err;
    }
  }
  // Retention: every process sweeps; SKIP LOCKED claims keep them from deleting twice.
  const sweeper = new Sweeper(db.sql, blobs, log, { intervalS: config.sweepIntervalS });
  sweeper.start();
  webhooks.start();
  deps.conversions.start();
  started = true;
  hub?.markStarted();
  let closing: Promise<void> | undefined;
  return {
    port: acceptor.port,
    deps,
    router: acceptor.router,
    metrics,
    webhooks,
    acceptors: 1 + extra,
    close() {
      closing ??= stop();
      return closing;
    },
  };
  async function stop(): Promise<void> {
    acceptor.stopListening();
    // The threads stop listening and wait for their requests while the jobs finish.
    const drained = threads?.close((config.shutdownGraceS + 10) * 1000);
    // Running jobs may finish within the grace period; the rest go back to the job table, and
    // the requests waiting for them are answered 202.
    await deps.conversions.stop(config.shutdownGraceS * 1000);
    await acceptor.idle(ANSWER_GRACE_MS);
    acceptor.closeConnections();
    await drained;
    unfollow?.();
    await sweeper.stop();
    await webhooks.stop();
    await executor.close();
    await gate.close();
    if (!opts.db) await db.close();
  }
}
