// The service's configuration, read once from environment variables (README lists each one).
import os from 'node:os';
import { PLANS, type Plan, type PlanLimits } from './plans.js';

/** Limits that replace a plan's defaults, e.g. {"lite": {"concurrency": 4}}. */
export type PlanOverrides = Partial<Record<Plan, Partial<PlanLimits>>>;

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl?: string;
  /** Postgres schema for docpipe's tables (default: the search_path's, usually public). */
  databaseSchema?: string;
  redisUrl?: string;
  /** Prepended to every Redis key of the billing gate (REDIS_PREFIX, default `dp:`). */
  redisPrefix: string;
  /** Per-plan limit changes over src/plans.ts (PLAN_OVERRIDES, JSON). */
  planOverrides: PlanOverrides;
  poolThreads: number;
  /** Event loops serving HTTP on the one port (HTTP_THREADS, default: the cores); one with the
   *  embedded database. */
  httpThreads: number;
  syncWaitDefaultS: number;
  logLevel: string;
  allowPrivateNetwork: boolean;
  ai?: { baseUrl: string; apiKey?: string; model: string };
  /** Largest request body accepted through the edge (multipart). */
  maxBodyBytes: number;
  /** Largest JSON body; bigger documents go as multipart files. */
  maxJsonBytes: number;
  /** Seconds between retention sweeps (SWEEP_INTERVAL_S, default 60; 0 turns the sweeper off). */
  sweepIntervalS: number;
  /** Seconds between the mending sweeps: lost settles, the gate audit, pending blobs
   *  (MEND_INTERVAL_S, default 10). */
  mendIntervalS: number;
  /** Wall-clock limit of one conversion task (TASK_TIMEOUT_S). */
  taskTimeoutS: number;
  /** Heap limit of each worker thread (WORKER_HEAP_MB, default 2048: pool.ts DEFAULT_HEAP_MB says why not less). */
  workerHeapMb: number;
  /** Young generation of each worker thread (WORKER_YOUNG_MB, default 192: pool.ts DEFAULT_YOUNG_MB says why). */
  workerYoungMb: number;
  /** Nice increment of the converter threads (WORKER_NICE, 0–19, default 10). */
  workerNice: number;
  /** Converter threads on Linux's SCHED_IDLE policy besides their nice (WORKER_SCHED_IDLE, 0 or 1, default 0). */
  workerSchedIdle: boolean;
  /** On SIGTERM, how long running jobs may finish before they are handed back (SHUTDOWN_GRACE_S). */
  shutdownGraceS: number;
  /** Multiplies every webhook retry delay (WEBHOOK_TIME_SCALE, default 1; tests use 0.001). */
  webhookTimeScale: number;
  /** Time allowed for one webhook try (WEBHOOK_TIMEOUT_MS, default 10000). */
  webhookTimeoutMs: number;
}

const MB = 1000 * 1000;

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
}

function atMost(max: number, name: string, n: number): number {
  if (n > max) throw new Error(`${name} must be at most ${max}, got ${n}`);
  return n;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cores = Math.max(1, os.availableParallelism());
  return {
    port: int(env, 'PORT', 8080),
    host: env.HOST || '0.0.0.0',
    dataDir: env.DATA_DIR || './data',
    databaseUrl: env.DATABASE_URL || undefined,
    databaseSchema: env.DATABASE_SCHEMA || undefined,
    redisUrl: env.REDIS_URL || undefined,
    redisPrefix: redisPrefix(env.REDIS_PREFIX),
    planOverrides: planOverrides(env.PLAN_OVERRIDES),
    poolThreads: int(env, 'POOL_THREADS', cores),
    httpThreads: Math.max(1, int(env, 'HTTP_THREADS', cores)),
    syncWaitDefaultS: Math.min(60, int(env, 'SYNC_WAIT_DEFAULT_S', 10)),
    logLevel: env.LOG_LEVEL || 'info',
    allowPrivateNetwork: env.ALLOW_PRIVATE_NETWORK === '1',
    ai: env.AI_BASE_URL
      ? { baseUrl: env.AI_BASE_URL, apiKey: env.AI_API_KEY || undefined, model: env.AI_MODEL || 'gpt-4o-mini' }
      : undefined,
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 100 * MB),
    maxJsonBytes: int(env, 'MAX_JSON_BYTES', 20 * MB),
    sweepIntervalS: int(env, 'SWEEP_INTERVAL_S', 60),
    mendIntervalS: positive(env, 'MEND_INTERVAL_S', 10),
    taskTimeoutS: int(env, 'TASK_TIMEOUT_S', 120),
    workerHeapMb: int(env, 'WORKER_HEAP_MB', 2048),
    workerYoungMb: positive(env, 'WORKER_YOUNG_MB', 192),
    workerNice: atMost(19, 'WORKER_NICE', int(env, 'WORKER_NICE', 10)),
    workerSchedIdle: atMost(1, 'WORKER_SCHED_IDLE', int(env, 'WORKER_SCHED_IDLE', 0)) === 1,
    shutdownGraceS: int(env, 'SHUTDOWN_GRACE_S', 25),
    webhookTimeScale: positive(env, 'WEBHOOK_TIME_SCALE', 1),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 10_000),
  };
}

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

function redisPrefix(raw: string | undefined): string {
  if (raw === undefined || raw === '') return 'dp:';
  if (/[{}]/.test(raw)) throw new Error(`REDIS_PREFIX must not contain braces, got "${raw}"`);
  return raw;
}

const LIMIT_NAMES: ReadonlyArray<keyof PlanLimits> = [
  'fileBytes', 'pageCap', 'filesPerMonth', 'storageBytes', 'concurrency', 'requestsPerMinute',
];

/** PLAN_OVERRIDES: a JSON object of plan name -> { limit name: non-negative integer }. */
export function planOverrides(raw: string | undefined): PlanOverrides {
  if (raw === undefined || raw.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw new Error('PLAN_OVERRIDES must be JSON, e.g. {"lite":{"concurrency":4}}');
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('PLAN_OVERRIDES must be a JSON object');
  const out: PlanOverrides = {};
  for (const [plan, limits] of Object.entries(v as Record<string, unknown>)) {
    if (!(PLANS as readonly string[]).includes(plan)) throw new Error(`PLAN_OVERRIDES: unknown plan "${plan}"`);
    if (!limits || typeof limits !== 'object' || Array.isArray(limits)) throw new Error(`PLAN_OVERRIDES.${plan} must be an object`);
    const set: Partial<PlanLimits> = {};
    for (const [name, n] of Object.entries(limits as Record<string, unknown>)) {
      if (!(LIMIT_NAMES as readonly string[]).includes(name)) throw new Error(`PLAN_OVERRIDES.${plan}: unknown limit "${name}"`);
      if (!Number.isSafeInteger(n) || (n as number) < 0) throw new Error(`PLAN_OVERRIDES.${plan}.${name} must be a non-negative integer`);
      set[name as keyof PlanLimits] = n as number;
    }
    out[plan as Plan] = set;
  }
  return out;
}
