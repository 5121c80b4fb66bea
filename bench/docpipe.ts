// Runs docpipe for the bench the way it runs in production: the command `npm start` runs
// (package.json: node, its flags, dist/src/main.js; the Dockerfile's CMD is the same), built
// from the sources as they are (scripts/build.mjs, once per bench process), as a child
// process, on the machine's real Postgres (a schema of its own, dropped at the end) and Redis
// (a key prefix of its own, deleted at the end), a temp DATA_DIR, LOG_LEVEL=warn and
// POOL_THREADS=2. The account and key are made with the admin functions before the first start:
// plan max, credits granted through the ledger, and PLAN_OVERRIDES lifting the concurrency and
// rate limits above anything the load can reach. Each scenario gets a fresh process (so RSS
// readings start from a clean heap) on the same schema and account; --quick shares one.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { openDb, socketOf, type Db } from '../src/store/db.js';
import { createAccount, createKey, SCOPES } from '../src/store/accounts.js';
import { grantCredits, MAX_GRANT } from '../src/billing/ledger.js';

export const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
/** Where Debian's Postgres puts its Unix socket. */
const SOCKET_DIR = '/var/run/postgresql';
/**
 * The machine's Postgres as the README tells a server on the database's own machine to reach it:
 * through its Unix socket when it has one (scenario A, three alternating pairs on 2 cores:
 * 4,248 / 4,739 / 3,680 req/s against 3,747 / 3,632 / 3,682 over loopback TCP), loopback TCP
 * otherwise. Every result states which (databaseTransport).
 */
export const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL
  ?? (existsSync(path.join(SOCKET_DIR, '.s.PGSQL.5432')) ? `postgres://postgres@localhost/test?host=${SOCKET_DIR}` : 'postgres://postgres@127.0.0.1:5432/test');

/** How the bench reaches Postgres, in words: "Unix socket /var/run/postgresql" or "TCP 127.0.0.1:5432". */
export function databaseTransport(url = DATABASE_URL): string {
  const { path: socket } = socketOf(url);
  if (socket) return `Unix socket ${path.dirname(socket)}`;
  const u = new URL(url);
  return `TCP ${u.hostname}:${u.port || 5432}`;
}
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const POOL_THREADS = 2;
/** Seconds of load on a fresh server (or converter pool) before its steady state is measured: A's
 *  docpipe, and every side of B (b-pdf.ts says why one pass was not enough). */
export const WARM_S = 45;

/** Far above what 2 cores can drive, so the load measures the service, not its limits. */
const PLAN_OVERRIDES = {
  max: { concurrency: 1_000_000, requestsPerMinute: 1_000_000_000, filesPerMonth: 1_000_000_000, storageBytes: 2 ** 50 },
};

export interface Instance {
  origin: string;
  pid: number;
  /** Resident set size of the server process (all its threads), bytes, read from /proc. */
  rss(): number;
  /** Peak RSS since the process started (VmHWM), bytes. */
  peakRss(): number;
  stop(): Promise<void>;
}

export interface Bench {
  db: Db;
  schema: string;
  accountId: string;
  key: string;
  /** A fresh server process; `nodeArgs` go before the script (e.g. --cpu-prof to investigate). */
  start(env?: Record<string, string>, nodeArgs?: string[]): Promise<Instance>;
  close(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** A field of /proc/<pid>/status in bytes (VmRSS, VmHWM); 0 once the process is gone. */
export function procBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

async function waitHealthy(origin: string, child: ChildProcess, logFile: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`docpipe exited with ${child.exitCode}:\n${tail(logFile)}`);
    try {
      const res = await fetch(`${origin}/readyz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`docpipe did not become ready in ${timeoutMs} ms:\n${tail(logFile)}`);
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-30).join('\n');
  } catch {
    return '(no log)';
  }
}

export interface Spawned extends Instance {
  port: number;
  logFile: string;
  /** Settles when the process has exited, however it ended. */
  exited: Promise<void>;
  /** Sends a signal (SIGKILL: dies at once, as in a crash). */
  kill(signal: NodeJS.Signals): void;
}

/** The server's entry as `npm start` runs it: compiled by its prestart (scripts/build.mjs). */
export const SERVER_ENTRY = 'dist/src/main.js';

/** The node flags `npm start` gives the server (package.json), which the image's CMD gives too. */
export function serverNodeArgs(): string[] {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const words = pkg.scripts.start.trim().split(/\s+/);
  if (words[0] !== 'node' || words.at(-1) !== SERVER_ENTRY) throw new Error(`npm start is not "node <flags> ${SERVER_ENTRY}": ${pkg.scripts.start}`);
  return words.slice(1, -1);
}

let built = false;

/** Builds the server from the sources as they are now, as `npm start` does first (once per process). */
export function buildServer(): void {
  if (built) return;
  const run = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
  if (run.status !== 0) throw new Error(`the server's build failed (${run.status ?? run.signal})`);
  built = true;
}

/**
 * Starts the server as `npm start` does (serverNodeArgs) with `env` over this process's
 * environment (a free port unless PORT is given, 127.0.0.1, LOG_LEVEL=warn), its output in <logDir>/server-<port>.log,
 * and resolves once /readyz answers 200. stop() sends SIGTERM and SIGKILL after 15 s.
 */
export async function spawnDocpipe(env: Record<string, string>, opts: { logDir: string; nodeArgs?: string[]; timeoutMs?: number }): Promise<Spawned> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const logFile = path.join(opts.logDir, `server-${port}.log`);
  const log = createWriteStream(logFile, { flags: 'a' });
  buildServer();
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...serverNodeArgs(), SERVER_ENTRY], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, HOST: '127.0.0.1', LOG_LEVEL: 'warn', LOG_PRETTY: '0', ...env, PORT: String(port) },
  });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    await waitHealthy(origin, child, logFile, opts.timeoutMs ?? 30_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const pid = child.pid!;
  return {
    origin,
    port,
    pid,
    logFile,
    exited,
    kill: (signal) => { child.kill(signal); },
    rss: () => procBytes(pid, 'VmRSS'),
    peakRss: () => procBytes(pid, 'VmHWM'),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * `reuse` (the --quick mode) keeps one server process for every scenario: start() hands out the
 * same one and stop() leaves it running until close(). It saves a start-up per scenario, at the
 * price of RSS figures that carry what earlier scenarios left behind.
 */
export async function setUpBench(opts: { reuse?: boolean } = {}): Promise<Bench> {
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const redisPrefix = `bench:${randomBytes(5).toString('hex')}:`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-bench-'));
  const db = await openDb({ databaseUrl: DATABASE_URL, dataDir, schema, max: 2 });
  const account = await createAccount(db.sql, { name: 'bench', plan: 'max', subscription: 'active' });
  const { key } = await createKey(db.sql, account.id, SCOPES);
  await grantCredits(db.sql, account.id, MAX_GRANT, 'bench', { url: REDIS_URL, prefix: redisPrefix });
  const running = new Set<Instance>();
  let shared: Promise<Instance> | undefined;

  const launch = async (extra: Record<string, string> = {}, nodeArgs: string[] = []): Promise<Instance> => {
    const child = await spawnDocpipe({
      DATABASE_URL,
      DATABASE_SCHEMA: schema,
      REDIS_URL,
      REDIS_PREFIX: redisPrefix,
      DATA_DIR: dataDir,
      POOL_THREADS: String(POOL_THREADS),
      // a stopped bench server hands leftover work back quickly (the schema is dropped anyway)
      SHUTDOWN_GRACE_S: '5',
      PLAN_OVERRIDES: JSON.stringify(PLAN_OVERRIDES),
      ...extra,
    }, { logDir: dataDir, nodeArgs });
    const inst: Instance = {
      ...child,
      async stop() {
        running.delete(inst);
        await child.stop();
      },
    };
    running.add(inst);
    return inst;
  };

  const start = async (extra: Record<string, string> = {}, nodeArgs: string[] = []): Promise<Instance> => {
    if (!opts.reuse || Object.keys(extra).length > 0 || nodeArgs.length > 0) return launch(extra, nodeArgs);
    shared ??= launch();
    return { ...(await shared), stop: async () => {} };
  };

  return {
    db, schema, accountId: account.id, key, start,
    async close() {
      for (const inst of [...running]) await inst.stop();
      await db.sql.unsafe(`drop schema if exists "${schema}" cascade`).catch(() => {});
      await db.close();
      const redis = new Redis(REDIS_URL, { lazyConnect: true });
      try {
        await redis.connect();
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}*`, 'COUNT', 1000);
          if (keys.length) await redis.del(...keys);
          cursor = next;
        } while (cursor !== '0');
      } finally {
        redis.disconnect();
      }
      keepServerLogs(dataDir);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Copies the servers' logs that say anything (they run at LOG_LEVEL=warn: a quiet server leaves
 * an empty one) to bench/results/logs/<time>/ before their directory goes, so that a scenario
 * that went wrong can be read afterwards. (An E run once took 351 s with requests unanswered for
 * 300 s, and its log went with the temporary directory.)
 */
function keepServerLogs(dataDir: string): void {
  const logs = readdirSync(dataDir).filter((f) => /^server-\d+\.log$/.test(f) && statSync(path.join(dataDir, f)).size > 0);
  if (logs.length === 0) return;
  const to = path.join(ROOT, 'bench', 'results', 'logs', new Date().toISOString().replace(/[:.]/g, '-'));
  mkdirSync(to, { recursive: true });
  for (const f of logs) copyFileSync(path.join(dataDir, f), path.join(to, f));
  console.log(`server logs with warnings or errors kept in ${path.relative(ROOT, to)}/`);
}
