// A private redis-server for the chaos run, on a free port of its own (the machine's shared Redis
// is never touched): started without persistence, so that killing it and starting it again is a
// Redis that comes back empty, and every balance must be rebuilt from the ledger.
import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';

export interface PrivateRedis {
  port: number;
  url: string;
  /** Kills the server at once (SIGKILL): every key is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startPrivateRedis(port: number): Promise<PrivateRedis> {
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const start = async (): Promise<void> => {
    child = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      // The gate's keys carry no TTL and must never be evicted (see src/billing/gate.ts).
      '--maxmemory-policy', 'noeviction', '--logfile', '',
    ], { stdio: 'ignore' });
    const c = child;
    exited = new Promise((r) => c.once('exit', () => r()));
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      for (let i = 0; ; i++) {
        if (c.exitCode !== null) throw new Error(`redis-server exited with ${c.exitCode} (port ${port} taken?)`);
        try {
          if (probe.status !== 'ready') await probe.connect();
          if ((await probe.ping()) === 'PONG') return;
        } catch {
          if (i > 100) throw new Error(`redis-server on ${port} did not answer in 10 s`);
          probe.disconnect();
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    } finally {
      probe.disconnect();
    }
  };

  const kill = async (): Promise<void> => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await exited;
  };

  await start();
  return { port, url: `redis://127.0.0.1:${port}`, kill, start, stop: kill };
}
