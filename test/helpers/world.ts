// A small world per test: its own database (a fresh Postgres schema, or a fresh embedded
// PGlite under a temp DATA_DIR, copied from a template migrated once per run), its own data
// directory, a server on a free port, and an account with a key. Nothing is shared between test files.
// Billing: the gate is the in-process LocalGate unless `redis: true`, which runs the RedisGate on
// REDIS_URL (default redis://127.0.0.1:6379) under a key prefix of this world's own, removed at
// close. Every account newKey() makes is granted DEFAULT_CREDITS unless `credits` says otherwise,
// so tests that are not about money never meet 402.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { loadConfig, type Config } from '../../src/config.js';
import { openDb, type Db } from '../../src/store/db.js';
import { startApp, type RunningApp } from '../../src/server/app.js';
import { createLogger } from '../../src/log.js';
import { createAccount, createKey, SCOPES, type Plan, type Scope, type Subscription } from '../../src/store/accounts.js';
import { Redis } from 'ioredis';
import { RedisGate } from '../../src/billing/redis-gate.js';
import { LocalGate } from '../../src/billing/local-gate.js';
import { InlineExecutor, type Executor, type Task } from '../../src/jobs/executor.js';
import type { RunResult } from '../../src/converters/registry.js';
import { seedEmbedded } from './embedded-template.js';
import { insertConversion } from '../../src/store/conversions.js';
import { newId } from '../../src/store/ids.js';

export type Mode = 'postgres' | 'embedded';
export const MODES: Mode[] = (process.env.DOCPIPE_TEST_MODES?.split(',') as Mode[] | undefined) ?? ['postgres', 'embedded'];
/**
 * The store modes a test file runs its worlds in. storeModes(): every mode, for tests whose
 * behaviour depends on the store or on the gate that goes with it (transactions and their
 * snapshots, locks and leases, concurrency on the embedded store's one connection, its start and
 * stop, RedisGate beside Postgres and LocalGate beside PGlite). oneMode(): the first mode only, for
 * tests of HTTP, validation and converters, whose queries the storeModes() files run against
 * both stores. DOCPIPE_TEST_ALL_MODES=1 runs every file in every mode.
 */
export function storeModes(): Mode[] {
  return MODES;
}
export function oneMode(): Mode[] {
  return process.env.DOCPIPE_TEST_ALL_MODES === '1' ? MODES : MODES.slice(0, 1);
}
export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const DEFAULT_CREDITS = 1_000_000;

export interface WorldOptions {
  /** Run the billing gate on Redis (a prefix of this world's own) instead of in process. */
  redis?: boolean;
  /** Run conversions on this executor (tests that hold work). */
  executor?: Executor;
  /** Run conversions on the real worker pool (1 thread) instead of in-thread; tests that
   *  measure memory keep the default, as threads starting up move RSS. */
  pool?: boolean;
  /** Credits granted to the main account (default DEFAULT_CREDITS). */
  credits?: number;
  plan?: Plan;
  /** Postgres mode: the server reaches this world's schema through this URL (a cuttable relay,
   *  say), while `db` — what the test itself queries — stays connected directly. */
  appDatabaseUrl?: string;
}

export interface World {
  mode: Mode;
  url: string;
  app: RunningApp;
  db: Db;
  dataDir: string;
  config: Config;
  accountId: string;
  key: string;
  /** Redis key prefix of this world's gate, when it runs on Redis. */
  redisPrefix?: string;
  newKey(opts?: { plan?: Plan; scopes?: readonly Scope[]; subscription?: Subscription; credits?: number }): Promise<{ accountId: string; key: string }>;
  /** Grants credits through the running server's ledger (ledger row, then the gate). */
  grant(accountId: string, amount: number): Promise<void>;
  /** Loses the gate's state as FLUSHALL (of this world's keys only) or a restart would. */
  wipeGate(): Promise<void>;
  req(method: string, p: string, opts?: { key?: string | null; json?: unknown; body?: RequestInit['body']; headers?: Record<string, string> }): Promise<Response>;
  close(): Promise<void>;
}

/** A store of a test's own (in Postgres a new schema with `max` connections, else an embedded
 *  one; its data directory too; all gone at teardown), for tests of the store's functions
 *  without a server. */
export async function ownStore(t: { teardown(fn: () => Promise<void>): void }, label: string, max: number, mode: Mode = 'postgres'): Promise<Db> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `docpipe-${label}-`));
  const db = await openDb(mode === 'postgres' ? { databaseUrl: PG_URL, schema, dataDir, max } : { dataDir });
  t.teardown(async () => {
    await db.close();
    if (mode === 'postgres') await dropSchema(schema);
    rmSync(dataDir, { recursive: true, force: true });
  });
  return db;
}

/** Stores a conversion of one PDF source (no job, no credits) with its source in `status`. */
export async function insertOnePdf(sql: Db['sql'], accountId: string, status: 'queued' | 'running'): Promise<{ id: string; sourceId: string }> {
  const id = newId('conv');
  const sourceId = newId('file');
  await insertConversion(sql, {
    id, accountId, name: 'a.pdf', endpoint: 'pdf', operation: 'parse', options: {}, metadata: null,
    store: false, createdAt: new Date(), expiresAt: null, creditsReserved: 0,
  }, [{ id: sourceId, position: 0, role: 'source', name: 'a.pdf', mime: 'application/pdf', status, bytes: 1 }]);
  return { id, sourceId };
}

/** Drops a test's schema on the machine's Postgres (with a connection of its own). */
export async function dropSchema(schema: string): Promise<void> {
  const sql = postgres(PG_URL, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`drop schema if exists "${schema}" cascade`);
  } finally {
    await sql.end();
  }
}

export async function startWorld(mode: Mode, env: Record<string, string> = {}, opts: WorldOptions = {}): Promise<World> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-world-'));
  const schema = `t_${randomBytes(6).toString('hex')}`;
  // The embedded store starts from a copy of one migrated once per run (embedded-template.ts).
  if (mode === 'embedded') await seedEmbedded(dataDir);
  const db = mode === 'postgres'
    ? await openDb({ databaseUrl: PG_URL, dataDir, schema, max: 4 })
    : await openDb({ dataDir });
  const redisPrefix = opts.redis ? `test:world:${randomBytes(6).toString('hex')}:` : undefined;
  const redisEnv: Record<string, string> = redisPrefix ? { REDIS_URL, REDIS_PREFIX: redisPrefix } : {};
  // The server's own connection pool when it must go another way than the test's.
  const appDb = mode === 'postgres' && opts.appDatabaseUrl
    ? await openDb({ databaseUrl: opts.appDatabaseUrl, dataDir, schema, max: 4 })
    : db;
  // One acceptor unless the test asks for more; acceptor threads connect to this world's schema.
  const threadsEnv: Record<string, string> = mode === 'postgres' && Number(env.HTTP_THREADS ?? 1) > 1
    ? { DATABASE_URL: opts.appDatabaseUrl ?? PG_URL, DATABASE_SCHEMA: schema } : {};
  const config = { ...loadConfig({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', SHUTDOWN_GRACE_S: '2', POOL_THREADS: '1', SYNC_WAIT_DEFAULT_S: '60', HTTP_THREADS: '1', ...redisEnv, ...threadsEnv, ...env }) };
  let app: RunningApp;
  try {
    app = await startApp(config, { db: appDb, log: createLogger('silent'), executor: opts.executor ?? (opts.pool ? undefined
      : new InlineExecutor({ tmpDir: path.join(dataDir, 'tmp'), allowPrivateNetwork: config.allowPrivateNetwork })) });
  } catch (err) {
    if (appDb !== db) await appDb.close();
    await db.close();
    if (mode === 'postgres') await dropSchema(schema);
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const url = `http://127.0.0.1:${app.port}`;

  const grant: World['grant'] = (accountId, amount) => app.deps.ledger.grant(accountId, amount, 'test grant');
  const newKey: World['newKey'] = async (o = {}) => {
    const a = await createAccount(db.sql, { name: 'test', plan: o.plan ?? 'pro', subscription: o.subscription });
    const { key } = await createKey(db.sql, a.id, o.scopes ?? SCOPES);
    const credits = o.credits ?? DEFAULT_CREDITS;
    if (credits > 0) await grant(a.id, credits);
    return { accountId: a.id, key };
  };
  const main = await newKey({ credits: opts.credits, plan: opts.plan });
  const wipeGate = async (): Promise<void> => {
    const gate = app.deps.gate;
    if (gate instanceof LocalGate) { gate.clear(); return; }
    if (!(gate instanceof RedisGate)) throw new Error('unknown gate');
    await deletePrefix(gate.redis as Redis, gate.prefix);
  };

  const world: World = {
    mode, url, app, db, dataDir, config, accountId: main.accountId, key: main.key, newKey, grant, wipeGate, redisPrefix,
    async req(method, p, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      const key = opts.key === undefined ? main.key : opts.key;
      if (key !== null) headers['x-api-key'] ??= key;
      let body = opts.body;
      if (opts.json !== undefined) {
        body = JSON.stringify(opts.json);
        headers['content-type'] ??= 'application/json';
      }
      return fetch(url + p, { method, headers, body });
    },
    async close() {
      await app.close();
      if (redisPrefix) {
        // Late settles of work still running at close may have written keys: remove them all.
        const redis = new Redis(REDIS_URL);
        await deletePrefix(redis, redisPrefix);
        await redis.quit();
      }
      if (appDb !== db) await appDb.close();
      await db.close();
      if (mode === 'postgres') await dropSchema(schema);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return world;
}

/** Runs conversions inline, except that while held every task waits for release(): tests use
 *  it to keep conversions running (and their reservations open) for as long as they need. */
export class HeldExecutor implements Executor {
  private readonly tmpDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-held-'));
  private readonly inner = new InlineExecutor({ tmpDir: this.tmpDir, allowPrivateNetwork: false });
  private held = false;
  private waiting: Array<() => void> = [];
  private listeners: Array<() => void> = [];

  hold(): void {
    this.held = true;
  }

  release(): void {
    this.held = false;
    for (const go of this.waiting.splice(0)) go();
    this.changed();
  }

  /** Tasks waiting for release(). */
  get waitingTasks(): number {
    return this.waiting.length;
  }

  async run(task: Task, signal: AbortSignal, onProgress?: (done: number, total: number) => void): Promise<RunResult> {
    if (this.held) {
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        this.changed();
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
    return this.inner.run(task, signal, onProgress);
  }

  queued(): number {
    return 0;
  }

  /** Saturated (as a full pool would be) while held with at least one task waiting. */
  saturated(): boolean {
    return this.held && this.waiting.length > 0;
  }

  /** As the pool's: told when saturated() may have changed (a task held, or all released). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }

  async close(): Promise<void> {
    this.release();
    rmSync(this.tmpDir, { recursive: true, force: true });
  }
}

/** Deletes every key under a prefix (never FLUSHALL: other test files share the Redis). */
export async function deletePrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

/** The Problem fields every error response must carry (DESIGN.md §8). */
export const PROBLEM_FIELDS = ['type', 'title', 'status', 'detail', 'instance', 'error', 'message', 'hint', 'request_id', 'retryable'];
