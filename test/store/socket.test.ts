// DATABASE_URL may name the server's Unix socket directory as libpq does (`?host=/dir`): the
// store then connects through the socket, and the parameter is not sent to the server as a
// setting. The URL's TCP address answers nothing, so only the socket can make the connection.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { CONNECT_TIMEOUT_S, EMBEDDED_CONNECT_TIMEOUT_S, openDb, socketOf } from '../../src/store/db.js';
import { dropSchema, PG_URL } from '../helpers/world.js';

const SOCKET_DIR = '/var/run/postgresql';

t.test('a host parameter naming a directory is the socket in it, taken out of the URL', async (t) => {
  t.same(socketOf('postgres://postgres@localhost/test?host=/var/run/postgresql'),
    { url: 'postgres://postgres@localhost/test', path: '/var/run/postgresql/.s.PGSQL.5432' });
  t.same(socketOf('postgres://u:p@db:6543/app?host=/tmp/&sslmode=disable'),
    { url: 'postgres://u:p@db:6543/app?sslmode=disable', path: '/tmp/.s.PGSQL.6543' }, 'the port names the socket; other parameters stay');
  t.same(socketOf('postgres://postgres@127.0.0.1:5432/test'), { url: 'postgres://postgres@127.0.0.1:5432/test' }, 'no host parameter: TCP');
  t.same(socketOf('postgres://postgres@127.0.0.1/test?host=db.example'), { url: 'postgres://postgres@127.0.0.1/test?host=db.example' },
    'a host that is not a directory is left to the client');
});

t.test('the store connects through the socket and migrates as over TCP', { skip: existsSync(path.join(SOCKET_DIR, '.s.PGSQL.5432')) ? false : `no PostgreSQL socket in ${SOCKET_DIR}` }, async (t) => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-socket-'));
  const tcp = new URL(PG_URL);
  // an address that answers nothing: only the socket can make this connection work
  const url = `postgres://${tcp.username}@127.0.0.1:${tcp.port || 5432}${tcp.pathname}?host=${SOCKET_DIR}&connect_timeout=3`;
  const db = await openDb({ databaseUrl: url.replace('127.0.0.1', '192.0.2.1'), schema, dataDir, max: 1 });
  t.teardown(async () => { await db.close(); await dropSchema(schema); rmSync(dataDir, { recursive: true, force: true }); });
  const [row] = await db.sql`select inet_client_addr() as addr, current_schema() as schema,
    (select count(*) from pg_tables where schemaname = current_schema())::int as tables`;
  t.equal(row!.addr, null, 'a Unix-socket connection has no client address');
  t.equal(row!.schema, schema, 'in the store\'s schema');
  t.ok((row!.tables as number) > 5, 'migrated');
  await t.rejects(db.sql`select current_setting('host')`, /unrecognized configuration parameter/, 'host was not sent as a setting');
});

t.test('a server elsewhere must connect within CONNECT_TIMEOUT_S; the embedded store waits for its own socket', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-socket-'));
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const embedded = await openDb({ dataDir, max: 1 });
  const remote = await openDb({ databaseUrl: PG_URL, schema, dataDir, max: 1 });
  t.teardown(async () => { await embedded.close(); await remote.close(); await dropSchema(schema); rmSync(dataDir, { recursive: true, force: true }); });
  const timeout = (db: typeof embedded) => (db.sql as unknown as { options: { connect_timeout: number } }).options.connect_timeout;
  t.equal(embedded.embedded, true);
  t.equal(timeout(embedded), EMBEDDED_CONNECT_TIMEOUT_S);
  t.equal(timeout(remote), CONNECT_TIMEOUT_S);
  t.ok(EMBEDDED_CONNECT_TIMEOUT_S > CONNECT_TIMEOUT_S);
  const [row] = await embedded.sql`select count(*)::int as n from schema_migrations`;
  t.ok((row!.n as number) > 10, 'the embedded store connected and migrated');
});
