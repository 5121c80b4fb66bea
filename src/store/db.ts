// The database: a real PostgreSQL server when DATABASE_URL is set, otherwise PGlite (Postgres in
// WASM, data under DATA_DIR/pg) served over a loopback socket so that both speak through the
// same `postgres` client and the same SQL. Migrations run at open, one transaction each.
import { readdirSync, readFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { isDependencyDown } from '../errors.js';

export type Sql = postgres.Sql<Record<string, never>>;

export interface Db {
  sql: Sql;
  embedded: boolean;
  close(): Promise<void>;
}

export interface OpenDbOptions {
  databaseUrl?: string;
  dataDir: string;
  /** Use (and create) this schema instead of public: tests isolate themselves this way. */
  schema?: string;
  /** Connections in the pool (server mode). */
  max?: number;
  /** Apply pending migrations (default). An acceptor thread opens a database its process has
   *  already migrated. */
  migrate?: boolean;
}

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

export async function openDb(opts: OpenDbOptions): Promise<Db> {
  if (opts.databaseUrl) {
    const sql = connect(opts.databaseUrl, opts.schema, opts.max ?? 10);
    if (opts.schema && opts.migrate !== false) await sql.unsafe(`create schema if not exists "${safeIdent(opts.schema)}"`);
    if (opts.migrate !== false) await migrate(sql);
    return { sql, embedded: false, close: () => sql.end({ timeout: 5 }) };
  }
  return openEmbedded(opts);
}

/**
 * PGlite is one process's database: a second process opening the same files (the admin CLI
 * beside a running server) works on its own copy, and one of the two loses its changes. So the
 * process that opens the embedded store holds DATA_DIR/embedded.pid (host and PID) until it
 * closes it, and another process is refused at once while the holder runs. A file left by a
 * process that is gone (killed), or written on another host (a container since replaced), is
 * taken over.
 */
function holdEmbedded(dataDir: string): () => void {
  const file = path.join(dataDir, 'embedded.pid');
  const me = `${os.hostname()} ${process.pid}`;
  try {
    writeFileSync(file, me, { flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const [host, pidText] = readFileSync(file, 'utf8').trim().split(' ');
    const pid = Number(pidText);
    if (host === os.hostname() && pid !== process.pid && running(pid)) {
      throw new Error(`the embedded store in ${path.resolve(dataDir)} is held by a running docpipe process (PID ${pid}): `
        + 'stop it first (its changes would be lost otherwise), or run the server and this command with a DATABASE_URL. '
        + `If no docpipe process runs, remove ${file}.`);
    }
    writeFileSync(file, me);
  }
  return () => {
    try {
      if (readFileSync(file, 'utf8') === me) rmSync(file, { force: true });
    } catch { /* already gone */ }
  };
}

function running(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function openEmbedded(opts: OpenDbOptions): Promise<Db> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  const dir = path.resolve(opts.dataDir, 'pg');
  mkdirSync(dir, { recursive: true });
  const release = holdEmbedded(opts.dataDir);
  let pg;
  try {
    pg = await PGlite.create(dir);
  } catch (err) {
    release();
    throw err;
  }
  // PGlite has one session: one socket connection, one client connection.
  const server = new PGLiteSocketServer({ db: pg, host: '127.0.0.1', port: 0, maxConnections: 1 });
  await server.start();
  const sql = connect(`postgres://postgres@${server.getServerConn()}/postgres?connect_timeout=${EMBEDDED_CONNECT_TIMEOUT_S}`, opts.schema, 1);
  if (opts.schema) await sql.unsafe(`create schema if not exists "${safeIdent(opts.schema)}"`);
  await migrate(sql);
  return {
    sql,
    embedded: true,
    async close() {
      await sql.end({ timeout: 5 });
      await server.stop();
      await pg.close();
      release();
    },
  };
}

/**
 * While Postgres is away a request must fail fast (503 service_unavailable) and, once it is
 * back, the next request must find it at once. The client's defaults do neither: a connection
 * that failed is retried after a backoff that grows to 10–20 s (every query waits that long,
 * then fails; the first ones after the restart still wait), and a connect to a host that does
 * not answer waits 30 s. A DATABASE_URL that names these parameters keeps its own values.
 */
export const CONNECT_TIMEOUT_S = 5;
/**
 * The embedded store's client connects to PGlite's socket in this very process: that server is
 * never away, only late when the event loop is busy (PGlite runs each query synchronously), so
 * failing fast gains nothing there. A CI run that started two embedded stores at once on a
 * loaded machine saw the 5 s limit pass during one store's migrations.
 */
export const EMBEDDED_CONNECT_TIMEOUT_S = 120;
/** Seconds before reconnecting after the n-th failure in a row: 50 ms doubling, at most 0.25 s. */
export function reconnectDelay(failures: number): number {
  return Math.min(0.05 * 2 ** Math.max(0, failures - 1), 0.25);
}

/** How long a request waits for one query before it answers 503 (see `answered`). */
export const QUERY_DEADLINE_MS = 5_000;

/**
 * A query a request waits on, with a deadline: after a cut connection the client has been seen
 * to leave a query unsettled for good, and a request must not hang on it. Past the deadline the
 * caller gets a QUERY_DEADLINE error, a dependency failure (503, retryable); the query itself
 * goes on or fails on its own.
 */
export function answered<T>(query: PromiseLike<T>, ms = QUERY_DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`the database did not answer within ${ms} ms`), { code: 'QUERY_DEADLINE' })), ms);
  });
  return Promise.race([Promise.resolve(query), late]).finally(() => clearTimeout(timer));
}

/** The driver's errors for a connection that closed under its queries. */
const CLOSED = new Set(['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED']);

/** Whether `err` says the connection closed: such a connection must not go back to the pool
 *  (it is already among the closed ones; released, it would be handed out as if open). */
export function connectionClosed(err: unknown): boolean {
  return CLOSED.has((err as { code?: string } | undefined)?.code ?? '');
}

/**
 * A transaction whose statements travel together: BEGIN is sent with the first statements `fn`
 * issues instead of waiting for its answer, as the driver's `begin` does (a statement goes out
 * when it is executed or awaited, behind the ones before it), and COMMIT after `fn` resolves.
 * A transaction whose first decision needs its first statements' answers costs one round trip
 * less than with `begin`, and one issued whole at once costs one in all, plus the COMMIT.
 * `fn` sends its statements on `t`, in the order the server must run them. The transaction is
 * rolled back when `fn` throws, or when `keep` says its result must not be committed (writes
 * sent before a check's answer came back, say); a closed connection is left to the pool's
 * reconnection.
 */
export async function pipelined<T>(sql: Sql, fn: (t: Sql) => Promise<T>, keep: (result: T) => boolean = () => true): Promise<T> {
  const t = await sql.reserve();
  let closed = false;
  try {
    const begun = t`begin`.execute();
    // Its failure (a closed connection) is the statements' failure too, handled through `fn`.
    begun.catch(() => {});
    let result: T;
    try {
      result = await fn(t as unknown as Sql);
      await begun;
    } catch (err) {
      closed = connectionClosed(err);
      if (!closed) await t`rollback`.catch((e: unknown) => { closed = connectionClosed(e); });
      throw err;
    }
    try {
      await (keep(result) ? t`commit` : t`rollback`);
    } catch (err) {
      closed = connectionClosed(err);
      throw err;
    }
    return result;
  } finally {
    if (!closed) t.release();
  }
}

/** A value of a column written through `unnest`, as Postgres reads it from text. */
export type ColumnValue = string | number | boolean | Date | object | null | undefined;

/**
 * One column of a multi-row insert as a text array, for `insert ... select unnest($1::text[]),
 * unnest($2::int[]), ...` (conversions.ts insertConversions says why in the select list), the
 * statement casting each column to its type. Unlike a VALUES list, its text
 * is the same whatever the number of rows: each connection prepares it once and binds one
 * parameter a column. Dates as ISO strings, objects as JSON, booleans as t/f, null as NULL.
 *
 * The column is sent as the array's literal, written here in one flat string: every element
 * quoted (a backslash or a double quote in it escaped with a backslash), NULL bare. The driver's
 * own array parameter built the same text with a closure, two regular-expression replaces and a
 * concatenation per element, then a copy of the whole to flatten it as it wrote it. Under
 * scenario A (2026-11-30, V8's sampling heap profiler on the main thread, 5 s) about 97 % of the
 * files' contents handed to it outlived two young-generation collections and were promoted
 * (why, the profile does not say), where the same text decoded for rendering was not; with the
 * literal written here, none of them, and the bytes each HTTP thread promoted in 5 s fell from
 * 107–111 MB to 58–69 MB (`--trace-gc-nvp`), its scavenges' pauses in those 5 s from 280 ms to
 * 197–205 ms.
 */
export function textColumn<T>(rows: readonly T[], value: (row: T) => ColumnValue): string {
  // One join of the pieces, braces and commas among them: a flat string, nothing left to copy.
  const parts: string[] = new Array(rows.length + 1);
  for (let i = 0; i < rows.length; i++) parts[i] = (i === 0 ? '{' : ',') + arrayElement(value(rows[i]!));
  parts[rows.length] = rows.length === 0 ? '{}' : '}';
  return parts.join('');
}

/** One element of an array literal (see textColumn). */
function arrayElement(v: ColumnValue): string {
  if (v === null || v === undefined) return 'NULL';
  const text = typeof v === 'string' ? v
    : typeof v === 'number' ? String(v)
      : typeof v === 'boolean' ? (v ? 't' : 'f')
        : v instanceof Date ? v.toISOString()
          : JSON.stringify(v);
  return `"${text.indexOf('\\') === -1 && text.indexOf('"') === -1 ? text : text.replace(ARRAY_SPECIAL, '\\$&')}"`;
}

const ARRAY_SPECIAL = /[\\"]/g;

/**
 * A transaction sent whole in one round trip: BEGIN, the statements `statements` issues (each
 * executed as it is made, in the order the server must run them) and COMMIT, with no decision
 * between them. A statement that fails makes Postgres answer the COMMIT with a rollback; its
 * error is thrown. Resolves with the statements' results, in order. `waitForDisk: false` commits
 * without waiting for the WAL flush (asynchronous commit), for writes a crash of the database may
 * lose: a job's marks and progress, which a durable commit after them covers or which only inform.
 */
export async function atOnce(sql: Sql, statements: (t: Sql) => Array<PromiseLike<unknown>>,
  opts: { waitForDisk?: boolean } = {}): Promise<unknown[]> {
  const t = await sql.reserve();
  let failure: unknown;
  let sent: Array<PromiseLike<unknown>> = [];
  try {
    const begun = [t`begin`.execute()];
    if (opts.waitForDisk === false) begun.push(t`set local synchronous_commit = off`.execute());
    sent = statements(t as unknown as Sql);
    failure = await firstFailure([...begun, ...sent, t`commit`.execute()]);
  } finally {
    if (!connectionClosed(failure)) t.release();
  }
  if (failure !== undefined) throw failure;
  const results = await Promise.all(sent);
  forgetValues(sent);
  return results;
}

/**
 * Drops what answered statements hold of their values: the driver's query keeps the arguments it
 * was made with (`args`) and the list it sends (`parameters`), and a batch's values are most of
 * its bytes (each render's Markdown and output, the text columns). Under scenario A's load the
 * driver's finished queries stayed reachable for V8's young collections long after their batch,
 * from old objects already dead (which only a full collection finds; a heap snapshot, which
 * collects fully first, never showed them), and every value went to the old generation with
 * them. What holds them was not found; emptied once answered, they hold nothing worth keeping.
 * Measured with `--trace-gc-nvp` (README, Benchmarks): promoted bytes 4.0 → 1.2 KB a request,
 * an HTTP thread's young-collection pauses 10–13 → 4–5 ms each.
 */
function forgetValues(statements: Array<PromiseLike<unknown>>): void {
  for (const q of statements as Array<PromiseLike<unknown> & { args?: unknown[]; parameters?: unknown[] }>) {
    if (Array.isArray(q.args)) q.args = [];
    if (Array.isArray(q.parameters)) q.parameters = [];
  }
}

/**
 * The first error among `statements`, once all have settled (undefined when none failed); a
 * failure of the connection settles it at once: statements the driver still held back behind it
 * (it waits for a new statement's description before sending the next) are never answered.
 */
export function firstFailure(statements: Array<PromiseLike<unknown>>): Promise<unknown> {
  return new Promise((resolve) => {
    let left = statements.length;
    let first: unknown;
    const done = (): void => { if (--left === 0) resolve(first); };
    if (left === 0) resolve(undefined);
    for (const q of statements) {
      q.then(done, (err: unknown) => {
        first ??= err;
        if (isDependencyDown(err)) resolve(err);
        else done();
      });
    }
  });
}

/**
 * Where to connect: the URL's host and port, or, as libpq reads it, a `host` parameter naming a
 * directory (`postgres://user@localhost/db?host=/var/run/postgresql`): the server's Unix socket
 * in it. On the server's own machine the socket costs less per round trip than loopback TCP.
 * The parameter is taken out of the URL: the client would send it to the server as a setting.
 */
export function socketOf(url: string): { url: string; path?: string } {
  const u = new URL(url);
  const dir = u.searchParams.get('host');
  if (!dir?.startsWith('/')) return { url };
  u.searchParams.delete('host');
  return { url: u.toString(), path: `${dir.replace(/\/+$/, '')}/.s.PGSQL.${u.port || 5432}` };
}

function connect(given: string, schema: string | undefined, max: number): Sql {
  const { url, path: socket } = socketOf(given);
  const params = new URL(given).searchParams;
  return postgres(url, {
    max,
    // Every tagged-template statement is prepared once per connection and then only bound and
    // executed (the client's default, named here so that it stays on: the hot path's statements
    // are fixed texts). A pooler in transaction mode in front of Postgres would need it off.
    prepare: true,
    onnotice: () => {},
    connection: schema ? { search_path: safeIdent(schema) } : {},
    transform: { undefined: null },
    ...(params.has('connect_timeout') ? {} : { connect_timeout: CONNECT_TIMEOUT_S }),
    ...(params.has('backoff') ? {} : { backoff: reconnectDelay }),
    ...(socket ? { path: socket } : {}),
  }) as unknown as Sql;
}

function safeIdent(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`bad schema name ${name}`);
  return name;
}

/** Applies every migrations/NNNN_*.sql not yet applied, in order, one transaction each. */
export async function migrate(sql: Sql): Promise<void> {
  await sql`create table if not exists schema_migrations (
    version text primary key, applied_at timestamptz not null default now())`;
  const files = readdirSync(MIGRATIONS_DIR).filter((f) => /^\d{4}_.*\.sql$/.test(f)).sort();
  // Several processes may start at once on one database: each migration takes a lock and
  // re-checks, so exactly one applies it.
  for (const file of files) {
    await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(7411230)`;
      const [seen] = await tx`select 1 from schema_migrations where version = ${file}`;
      if (seen) return;
      await tx.unsafe(readFileSync(path.join(MIGRATIONS_DIR, file), 'utf8'));
      await tx`insert into schema_migrations (version) values (${file})`;
    });
  }
}
