// /readyz answers 503 while the process is starting: its main thread listens before its acceptor
// threads do, and a load balancer (or a load generator) told "ready" by it would open every
// connection of its load on that one thread while the others come up. Here the acceptor thread's
// Postgres connections go through a proxy that holds them, so the thread cannot listen (it
// listens once its own connection answers) until the test lets them through.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { InlineExecutor } from '../../src/jobs/executor.js';
import { startApp } from '../../src/server/app.js';
import { portFor } from '../../src/server/acceptors.js';
import { openDb } from '../../src/store/db.js';
import { dropSchema, PG_URL } from '../helpers/world.js';

interface Answer { status: number; body: string }

/** One GET on a connection of its own; undefined while nothing listens on the port. */
function get(port: number, p: string): Promise<Answer | undefined> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, agent: false, headers: { connection: 'close' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNREFUSED' ? resolve(undefined) : reject(err)));
    req.end();
  });
}

t.test('/readyz says the server is starting until every acceptor thread listens', async (t) => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-ready-'));
  const db = await openDb({ databaseUrl: PG_URL, dataDir, schema, max: 2 });
  t.teardown(async () => {
    await db.close();
    await dropSchema(schema);
    rmSync(dataDir, { recursive: true, force: true });
  });

  // Connections to Postgres that wait, unanswered, until `letThrough`.
  const target = new URL(PG_URL);
  let letThrough!: () => void;
  const through = new Promise<void>((resolve) => { letThrough = resolve; });
  let held = 0;
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((client) => {
    held++;
    sockets.add(client);
    client.pause();
    void through.then(() => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      sockets.add(upstream);
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
      client.pipe(upstream).pipe(client);
      client.resume();
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    proxy.close();
  });
  const proxied = new URL(PG_URL);
  proxied.port = String((proxy.address() as net.AddressInfo).port);

  const asked = loadConfig({
    DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', SHUTDOWN_GRACE_S: '2', POOL_THREADS: '1',
    HTTP_THREADS: '2', DATABASE_URL: proxied.toString(), DATABASE_SCHEMA: schema,
  });
  // The port the server will take, known before startApp resolves (which waits for the thread).
  const port = await portFor(asked);
  const config = { ...asked, port };
  // The main thread uses the test's own connections; the acceptor thread, the held ones.
  const starting = startApp(config, {
    db, log: createLogger('silent'),
    executor: new InlineExecutor({ tmpDir: path.join(dataDir, 'tmp'), allowPrivateNetwork: false }),
  });
  let failed: unknown;
  starting.catch((err: unknown) => { failed = err; });

  // The main thread listens first; the acceptor thread, started after it, waits for its Postgres.
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  let first: Answer | undefined;
  for (let i = 0; i < 400 && !first && failed === undefined; i++) {
    first = await get(port, '/readyz');
    if (!first) await sleep(25);
  }
  t.ok(first, 'the main thread listens');
  for (let i = 0; i < 400 && held === 0 && failed === undefined; i++) await sleep(25);
  t.equal(failed, undefined, 'the server is still starting');
  t.ok(held > 0, `the acceptor thread waits on its Postgres connection (${held} held)`);
  const waiting = await get(port, '/readyz');
  t.equal(waiting?.status, 503, 'not ready while an acceptor thread does not listen');
  t.match(JSON.parse(waiting!.body), { error: 'service_unavailable', retryable: true, detail: /starting/ });
  // Liveness is not readiness: the process is up.
  t.equal((await get(port, '/healthz'))?.status, 200);

  letThrough();
  const app = await starting;
  t.teardown(() => app.close());
  t.equal(app.acceptors, 2);
  // Ready from either thread now (fresh connections, spread by the kernel over both).
  const after = await Promise.all(Array.from({ length: 8 }, () => get(port, '/readyz')));
  t.same(after.map((a) => a?.status), Array(8).fill(200));
});
