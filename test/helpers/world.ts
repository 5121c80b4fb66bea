// A small world per test: its own database (a fresh Postgres schema, or a fresh embedded
// PGlite under a temp DATA_DIR), its own data directory, a server on a free port, and an
// account with a key. Nothing is shared between test files.
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

export type Mode = 'postgres' | 'embedded';
export const MODES: Mode[] = (process.env.DOCPIPE_TEST_MODES?.split(',') as Mode[] | undefined) ?? ['postgres', 'embedded'];
export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface World {
  mode: Mode;
  url: string;
  app: RunningApp;
  db: Db;
  dataDir: string;
  config: Config;
  accountId: string;
  key: string;
  newKey(opts?: { plan?: Plan; scopes?: readonly Scope[]; subscription?: Subscription }): Promise<{ accountId: string; key: string }>;
  req(method: string, p: string, opts?: { key?: string | null; json?: unknown; body?: RequestInit['body']; headers?: Record<string, string> }): Promise<Response>;
  close(): Promise<void>;
}

export async function startWorld(mode: Mode, env: Record<string, string> = {}): Promise<World> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-world-'));
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const db = mode === 'postgres'
    ? await openDb({ databaseUrl: PG_URL, dataDir, schema, max: 4 })
    : await openDb({ dataDir });
  const config = { ...loadConfig({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...env }) };
  const app = await startApp(config, { db, log: createLogger('silent') });
  const url = `http://127.0.0.1:${app.port}`;

  const newKey: World['newKey'] = async (opts = {}) => {
    const a = await createAccount(db.sql, { name: 'test', plan: opts.plan ?? 'pro', subscription: opts.subscription });
    const { key } = await createKey(db.sql, a.id, opts.scopes ?? SCOPES);
    return { accountId: a.id, key };
  };
  const main = await newKey();

  const world: World = {
    mode, url, app, db, dataDir, config, accountId: main.accountId, key: main.key, newKey,
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
      await db.close();
      if (mode === 'postgres') {
        const sql = postgres(PG_URL, { max: 1, onnotice: () => {} });
        await sql.unsafe(`drop schema if exists "${schema}" cascade`);
        await sql.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return world;
}

/** The Problem fields every error response must carry (DESIGN.md §8). */
export const PROBLEM_FIELDS = ['type', 'title', 'status', 'detail', 'instance', 'error', 'message', 'hint', 'request_id', 'retryable'];
