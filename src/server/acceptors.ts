// The acceptor threads of a process (HTTP_THREADS): the main thread serves HTTP as acceptor 0 and
// starts HTTP_THREADS − 1 worker threads (acceptor-thread.ts), each a uWebSockets.js app on the
// same port, so that HTTP, JSON, auth, rate limits, Markdown renders and answers spread over the
// cores while the converter pool, the job runner, the gate audit and the webhook dispatcher stay
// one per process in the main thread (reached over acceptor-link.ts).
//
// Threads need a database they can each connect to: with the embedded database (PGlite, one
// session) the process serves HTTP on its main thread alone.
import { createServer } from 'node:net';
import { MessageChannel, Worker, type ResourceLimits } from 'node:worker_threads';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { AcceptorHub } from './acceptor-link.js';
import type { AcceptorThreadData } from './acceptor-thread.js';
import { mainYoungGenerationMb } from '../pool/young-generation.js';

// When this file runs from source under tsx, the thread goes through the tsx bootstrap.
const THREAD_FILE = import.meta.url.endsWith('.ts')
  ? new URL('./acceptor-thread-tsx.mjs', import.meta.url)
  : new URL('./acceptor-thread.js', import.meta.url);

/** How many acceptor threads this process runs besides its main thread, and why not more. */
export function extraAcceptors(config: Config, embedded: boolean, log: Logger): number {
  const wanted = config.httpThreads;
  if (wanted <= 1) return 0;
  if (embedded || !config.databaseUrl) {
    log.info({ http_threads: wanted }, 'the embedded database has one session: HTTP is served on the main thread only');
    return 0;
  }
  return wanted - 1;
}

/**
 * A port for `host` to give every acceptor when the configuration says 0 (any): uWS sets
 * SO_REUSEPORT only on a listen to a given port, so the main thread cannot take "any" and share it.
 */
export function portFor(config: Config): Promise<number> {
  if (config.port !== 0) return Promise.resolve(config.port);
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, config.host, () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/**
 * An acceptor thread serves as the main thread does, with its young generation: the one the
 * process's --max-semi-space-size gives the main thread, which no longer sizes the threads
 * started after the pool cleared it (young-generation.ts); V8's default without the flag.
 */
export function acceptorResourceLimits(): ResourceLimits | undefined {
  const young = mainYoungGenerationMb();
  return young === undefined ? undefined : { maxYoungGenerationSizeMb: young };
}

export interface AcceptorThreads {
  /** Drains every thread (stop listening, answer what they hold) and ends them. */
  close(drainMs: number): Promise<void>;
}

/** Starts `count` acceptor threads on `port` and settles once each listens. */
export async function startAcceptorThreads(count: number, config: Config, port: number, hub: AcceptorHub,
  opts: { owner: string; sharedGate: boolean; commitTurn?: SharedArrayBuffer; log: Logger }): Promise<AcceptorThreads> {
  const workers: Worker[] = [];
  const started: Array<Promise<void>> = [];
  const resourceLimits = acceptorResourceLimits();
  for (let index = 1; index <= count; index++) {
    const { port1, port2 } = new MessageChannel();
    const data: AcceptorThreadData = {
      config: { ...config, port }, index, link: port2, poolState: hub.state, owner: opts.owner, sharedGate: opts.sharedGate,
      commitTurn: opts.commitTurn,
    };
    const worker = new Worker(THREAD_FILE, { workerData: data, transferList: [port2], resourceLimits });
    hub.attach(port1);
    workers.push(worker);
    worker.on('error', (err) => opts.log.error({ err, acceptor: index }, 'acceptor thread failed'));
    worker.on('exit', () => hub.detach(port1));
    started.push(new Promise<void>((resolve, reject) => {
      worker.once('message', (m: { ready?: number; failed?: string }) => {
        if (m.ready !== undefined) resolve();
        else reject(new Error(`acceptor thread ${index} did not start: ${m.failed}`));
      });
      worker.once('exit', (code) => reject(new Error(`acceptor thread ${index} exited with ${code} before it listened`)));
    }));
  }
  try {
    await Promise.all(started);
  } catch (err) {
    await Promise.all(workers.map((w) => w.terminate()));
    throw err;
  }
  return {
    async close(drainMs) {
      await hub.drain(drainMs);
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}
