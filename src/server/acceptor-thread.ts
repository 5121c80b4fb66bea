// An acceptor thread's entry (acceptors.ts starts it): one more uWebSockets.js app on the
// process's port, with its own database and Redis connections, its own key cache and group
// commit; what is one per process it reaches over its link (acceptor-link.ts). It posts
// `{ ready: port }` once it listens (or `{ failed: message }`), and on the link's drain stops
// listening, answers what it holds, closes its connections and says it is drained.
import { parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import type { Config } from '../config.js';
import { openDb } from '../store/db.js';
import { Blobs } from '../store/blobs.js';
import { createLogger } from '../log.js';
import { Metrics, meteredGate } from './metrics.js';
import { RedisGate } from '../billing/redis-gate.js';
import { createSender } from '../webhooks/deliver.js';
import { onEnqueue } from '../webhooks/outbox.js';
import { startAcceptor } from './acceptor.js';
import { AcceptorLink, LinkedAudit, LinkedExecutor, LinkedRunner, linkedGate, type MetricsText } from './acceptor-link.js';

export interface AcceptorThreadData {
  /** The process's configuration, with `port` the one its main thread listens on. */
  config: Config;
  /** This acceptor's number (1, 2, …; the main thread's is 0). */
  index: number;
  link: MessagePort;
  poolState: SharedArrayBuffer;
  /** The lease owner of the process's job runner. */
  owner: string;
  /** The process's gate is in-process (no Redis): reach it over the link. */
  sharedGate: boolean;
  /** The process's one group commit at a time (jobs/commit-turn.ts). */
  commitTurn?: SharedArrayBuffer;
}

const data = workerData as AcceptorThreadData;
const { config } = data;

try {
  const log = createLogger(config.logLevel).child({ acceptor: data.index });
  // The process's main thread has migrated the database already.
  const db = await openDb({ databaseUrl: config.databaseUrl, schema: config.databaseSchema, dataDir: config.dataDir, migrate: false });
  // A thread that cannot reach Postgres takes no connections: it listens once its own answers.
  await db.sql`select 1`;
  const link = new AcceptorLink(data.link, data.poolState);
  const metrics = new Metrics({ defaults: false, acceptor: data.index });
  const gate = meteredGate(data.sharedGate
    ? linkedGate(link)
    : new RedisGate({ redis: config.redisUrl!, prefix: config.redisPrefix }), metrics);
  const sender = createSender({ allowPrivateNetwork: config.allowPrivateNetwork, timeoutMs: config.webhookTimeoutMs });
  // Events this thread enqueues wake the process's one dispatcher.
  onEnqueue(() => link.note({ op: 'wake' }));
  const acceptor = await startAcceptor({
    config, db, blobs: new Blobs(config.dataDir), log, gate, metrics, sender,
    executor: new LinkedExecutor(link),
    metricsText: () => link.call<MetricsText>({ op: 'metrics' }),
    linked: { runner: new LinkedRunner(link, data.owner), audit: new LinkedAudit(link) },
    commitTurn: data.commitTurn,
    started: () => link.started(),
  });
  link.collect = () => metrics.registry.getMetricsAsJSON();
  link.onDrain = async () => {
    acceptor.stopListening();
    // Waits whose jobs the process hands back end now, answered 202.
    await acceptor.deps.conversions.stop(0);
    await acceptor.idle((config.shutdownGraceS + 5) * 1000);
    acceptor.closeConnections();
    await Promise.allSettled([gate.close(), sender.close(), db.close()]);
  };
  parentPort!.postMessage({ ready: acceptor.port });
} catch (err) {
  parentPort!.postMessage({ failed: (err as Error).message });
}
