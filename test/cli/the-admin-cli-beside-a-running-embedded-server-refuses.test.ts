// The admin CLI run beside a running embedded server (PGlite: one process's database) refuses
// at once, naming the server's PID, and changes nothing: before, it printed success while its
// changes went to a copy the server never saw. Once the server has stopped, the same command
// works. A stale lock (its process killed) does not block. Embedded mode only: with a
// DATABASE_URL the CLI and the server share Postgres (test/billing/*-within-the-audit.test.ts).
import t from 'tap';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { promisify } from 'node:util';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { openDb } from '../../src/store/db.js';
import { startApp } from '../../src/server/app.js';
import { createLogger } from '../../src/log.js';
import { createAccount } from '../../src/store/accounts.js';
import { readLedger } from '../../src/billing/ledger.js';
import { seedEmbedded } from '../helpers/embedded-template.js';

const run = promisify(execFile);
const BIN = path.resolve('bin/docpipe.js');

async function cli(dataDir: string, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  try {
    const r = await run(process.execPath, [BIN, ...args], { env: { ...process.env, DATABASE_URL: '', REDIS_URL: '', DATA_DIR: dataDir } });
    return { code: 0, out: r.stdout, err: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, out: x.stdout, err: x.stderr };
  }
}

t.test('the admin CLI beside a running embedded server', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-cli-beside-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  await seedEmbedded(dataDir);
  const db = await openDb({ dataDir });
  const app = await startApp(loadConfig({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' }), { db, log: createLogger('silent') });
  const account = await createAccount(db.sql, { name: 'Acme', plan: 'pro' });
  const accounts = async (): Promise<number> => (await db.sql<Array<{ n: number }>>`select count(*)::int as n from accounts`)[0]!.n;
  const before = await accounts();

  const created = await cli(dataDir, 'accounts', 'create', '--name', 'Beside', '--plan', 'lite', '--key');
  t.equal(created.code, 1, 'accounts create fails');
  t.equal(created.out, '', 'and prints no account or key');
  t.match(created.err, `held by a running docpipe process (PID ${process.pid})`, 'naming the server that holds the store');
  const granted = await cli(dataDir, 'credits', 'grant', '--account', account.id, '--amount', '5');
  t.equal(granted.code, 1, 'credits grant fails');
  t.notMatch(granted.out, 'balance', 'and reports no balance');
  t.equal(await accounts(), before, 'no account was added');
  t.equal((await readLedger(db.sql, account.id)).balance, 0, 'no credit was granted');

  await app.close();
  await db.close();
  t.notOk(existsSync(path.join(dataDir, 'embedded.pid')), 'the server gave the store up when it stopped');
  const after = await cli(dataDir, 'credits', 'grant', '--account', account.id, '--amount', '5');
  t.equal(after.code, 0, after.err);
  t.match(after.out, 'balance 5', 'with the server stopped the grant is made');

  // A lock left by a killed process on this host is taken over.
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await new Promise((r) => child.once('spawn', r));
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  writeFileSync(path.join(dataDir, 'embedded.pid'), `${os.hostname()} ${child.pid}`);
  const balance = await cli(dataDir, 'credits', 'balance', '--account', account.id);
  t.equal(balance.code, 0, balance.err);
  t.match(balance.out, '5', 'a stale lock does not block');
});
