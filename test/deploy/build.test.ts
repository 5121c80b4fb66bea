// `npm start` runs the server compiled by scripts/build.mjs (its prestart), as the image does:
// the build mirrors src/ in JavaScript with the SQL migrations and Lua scripts beside it and
// removes what no source makes, and the compiled server starts on the embedded store with the
// flags of `npm start`, embedded and on Postgres and Redis, its acceptor and converter threads
// loading their compiled entries.
import t from 'tap';
import type { Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { deletePrefix, dropSchema, PG_URL, REDIS_URL } from '../helpers/world.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { openDb } from '../../src/store/db.js';
import { createAccount, createKey, SCOPES } from '../../src/store/accounts.js';
import { requestsByAcceptor } from '../../src/server/metrics.js';
import { SERVER_ENTRY, serverNodeArgs } from '../../bench/docpipe.js';
import { buildReportPdf, REPORT } from '../fixtures/build/pdf.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// Inside the checkout (dist/ is not tracked), so the compiled code finds node_modules as
// dist/src does; a directory of this test's own, so a developer's dist/ is left alone.
const out = path.join(root, 'dist', `test-${randomBytes(4).toString('hex')}`);
t.teardown(() => rmSync(out, { recursive: true, force: true }));

const build = (): number | null =>
  spawnSync(process.execPath, [path.join(root, 'scripts', 'build.mjs'), out], { stdio: ['ignore', 'inherit', 'inherit'] }).status;

t.test('the build mirrors src/ in JavaScript, with the files that are not TypeScript', async (t) => {
  t.equal(build(), 0, 'the build succeeds');
  t.equal(SERVER_ENTRY, 'dist/src/main.js', 'npm start runs the compiled entry');
  for (const file of ['main.js', 'server/acceptor-thread.js', 'pool/worker.js']) t.ok(existsSync(path.join(out, 'src', file)), `src/${file}`);
  for (const asset of ['store/migrations/0001_init.sql', 'billing/lua/reserve-4.lua']) {
    t.equal(readFileSync(path.join(out, 'src', asset), 'utf8'), readFileSync(path.join(root, 'src', asset), 'utf8'), `src/${asset} is copied as it is`);
  }
  // What no source makes goes at the next build: a migration or module removed from src/ is not
  // applied or loaded from an old build.
  writeFileSync(path.join(out, 'src', 'store', 'migrations', '9999_gone.sql'), 'select 1;');
  writeFileSync(path.join(out, 'src', 'gone.js'), 'export {};');
  rmSync(path.join(out, 'src', 'main.js'));
  t.equal(build(), 0, 'the build succeeds again');
  t.notOk(existsSync(path.join(out, 'src', 'store', 'migrations', '9999_gone.sql')), 'a stale migration is removed');
  t.notOk(existsSync(path.join(out, 'src', 'gone.js')), 'a stale module is removed');
  t.ok(existsSync(path.join(out, 'src', 'main.js')), 'output removed since the last build is made again');
});

/** Starts the compiled entry with `npm start`'s flags; resolves once it listens. */
async function startBuilt(t: Test, env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServerProcess([...serverNodeArgs(), path.join(out, 'src', 'main.js')], { POOL_THREADS: '1', ...env });
  t.teardown(() => { if (server.child.exitCode === null) server.child.kill('SIGKILL'); });
  return server;
}

/** A Markdown render on a connection of its own; its status and HTML. */
async function render(origin: string, key: string, markdown: string): Promise<{ status: number; html: string | null | undefined }> {
  const res = await fetch(`${origin}/v1/convert/markdown/html`, {
    method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json', connection: 'close' }, body: JSON.stringify({ markdown }),
  });
  const body = await res.json() as { files?: Array<{ role: string; content: string | null }> };
  return { status: res.status, html: body.files?.find((f) => f.role === 'output')?.content };
}

t.test('the compiled server starts embedded with npm start\'s flags and converts', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-built-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const pdf = readFileSync(await buildReportPdf(dataDir));
  const server = await startBuilt(t, { DATABASE_URL: '', REDIS_URL: '', DATA_DIR: dataDir });
  const key = /API key \(shown once, keep it\): (dp_live_\w+)/.exec(server.printed)?.[1];
  t.ok(key, 'the first start made a key (the migrations ran)');
  const origin = `http://127.0.0.1:${server.port}`;
  const made = await render(origin, key!, '# Built');
  t.equal(made.status, 200, 'a render: 200');
  t.match(made.html, '<h1>Built</h1>', 'with its HTML');

  // A PDF goes to the converter pool, whose thread loads the compiled worker.
  const form = new FormData();
  form.append('file', new Blob([pdf], { type: 'application/pdf' }), 'report.pdf');
  const res = await fetch(`${origin}/v1/convert/pdf`, { method: 'POST', headers: { 'x-api-key': key! }, body: form });
  t.equal(res.status, 200, 'the PDF converts in the request');
  const conv = await res.json() as { files: Array<{ role: string; format: string | null; content: string | null }> };
  const md = conv.files.find((f) => f.role === 'output' && f.format === 'markdown')?.content ?? '';
  t.match(md, `# ${REPORT.title}`, 'its Markdown has the title as a heading');
  t.match(md, REPORT.page2Sentence, 'and the second page\'s text');
  t.equal(await server.stop(), 0, 'SIGTERM stops it cleanly');
});

t.test('the compiled server on Postgres and Redis serves from two acceptor threads', async (t) => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const prefix = `test:build:${randomBytes(4).toString('hex')}:`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-built-'));
  t.teardown(async () => {
    await dropSchema(schema);
    const redis = new Redis(REDIS_URL);
    await deletePrefix(redis, prefix);
    redis.disconnect();
    rmSync(dataDir, { recursive: true, force: true });
  });
  // The server migrates the empty schema from its compiled copy of the migrations.
  const server = await startBuilt(t, {
    DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema, REDIS_URL, REDIS_PREFIX: prefix, DATA_DIR: dataDir, HTTP_THREADS: '2',
  });
  const db = await openDb({ databaseUrl: PG_URL, schema, dataDir });
  t.teardown(() => db.close());
  const account = await createAccount(db.sql, { name: 'built', plan: 'pro' });
  const { key } = await createKey(db.sql, account.id, SCOPES);
  const origin = `http://127.0.0.1:${server.port}`;
  // The kernel hashes each connection to a thread: until both have served (40 all on one of
  // two would take odds of one in 2^39).
  let seen = new Map<number, number>();
  let renders = 0;
  for (let i = 0; i < 40 && [...seen.values()].filter((n) => n > 0).length < 2; i++) {
    renders++;
    const r = await render(origin, key, `# Thread ${i}`);
    t.equal(r.status, 200, `render ${i}: 200`);
    t.match(r.html, `<h1>Thread ${i}</h1>`, `render ${i}: its HTML`);
    seen = requestsByAcceptor(await (await fetch(`${origin}/metrics`, { headers: { connection: 'close' } })).text());
  }
  t.ok((seen.get(0) ?? 0) > 0, `the main thread served requests (${seen.get(0)})`);
  t.ok((seen.get(1) ?? 0) > 0, `the acceptor thread, from its compiled entry, served requests (${seen.get(1)})`);
  const stored = await db.sql<Array<{ n: number }>>`select count(*)::int as n from conversions where account_id = ${account.id}`;
  t.equal(stored[0]!.n, renders, 'every render is stored');
  t.equal(await server.stop(), 0, 'SIGTERM stops it cleanly');
});
