// The service's configuration, read once from environment variables (README lists each one).
import os from 'node:os';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl?: string;
  /** Postgres schema for docpipe's tables (default: the search_path's, usually public). */
  databaseSchema?: string;
  redisUrl?: string;
  poolThreads: number;
  syncWaitDefaultS: number;
  logLevel: string;
  allowPrivateNetwork: boolean;
  ai?: { baseUrl: string; apiKey?: string; model: string };
  /** Largest request body accepted through the edge (multipart). */
  maxBodyBytes: number;
  /** Largest JSON body; bigger documents go as multipart files. */
  maxJsonBytes: number;
}

const MB = 1000 * 1000;

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
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
    poolThreads: int(env, 'POOL_THREADS', cores),
    syncWaitDefaultS: Math.min(60, int(env, 'SYNC_WAIT_DEFAULT_S', 10)),
    logLevel: env.LOG_LEVEL || 'info',
    allowPrivateNetwork: env.ALLOW_PRIVATE_NETWORK === '1',
    ai: env.AI_BASE_URL
      ? { baseUrl: env.AI_BASE_URL, apiKey: env.AI_API_KEY || undefined, model: env.AI_MODEL || 'gpt-4o-mini' }
      : undefined,
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 100 * MB),
    maxJsonBytes: int(env, 'MAX_JSON_BYTES', 20 * MB),
  };
}
