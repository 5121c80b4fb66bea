import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { PG_URL } from '../helpers/world.js';
import { seedEmbedded } from '../helpers/embedded-template.js';
import { loadConfig } from '../../src/config.js';
import { openDb } from '../../src/store/db.js';
import { startApp } from '../../src/server/app.js';
import { createLogger } from '../../src/log.js';

const run = promisify(execFile);
const BIN = path.resolve('bin/docpipe.js');

async function cli(env: Record<string, string>, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  try {
    const r = await run(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } });
    return { code: 0, out: r.stdout, err: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, out: x.stdout, err: x.stderr };
  }
}

for (const mode of ['postgres', 'embedded'] as const) {
  t.test(`the admin CLI works against the ${mode} store`, async (t) => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-cli-'));
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const env: Record<string, string> = mode === 'postgres'
      ? { DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema, DATA_DIR: dataDir }
      : { DATABASE_URL: '', DATA_DIR: dataDir };
    t.teardown(async () => {
      rmSync(dataDir, { recursive: true, force: true });
      if (mode === 'postgres') {
        const sql = postgres(PG_URL, { max: 1, onnotice: () => {} });
        await sql.unsafe(`drop schema if exists "${schema}" cascade`);
        await sql.end();
      }
    });
    // A new embedded store is a copy of the run's migrated template (the CLI's own start-up
    // still migrates it, finding nothing to apply); the store's first start is first-start's.
    if (mode === 'embedded') await seedEmbedded(dataDir);

    const created = await cli(env, 'accounts', 'create', '--name', 'Acme', '--plan', 'lite');
    t.equal(created.code, 0, created.err);
    const accountId = /account (acct_\w+)/.exec(created.out)?.[1];
    t.ok(accountId, 'prints the account id');
    const key = await cli(env, 'keys', 'create', '--account', accountId!, '--scopes', 'read,convert');
    t.equal(key.code, 0, key.err);
    const apiKey = /(dp_live_\w+)/.exec(key.out)?.[1];
    t.ok(apiKey, 'prints the key once');
    const granted = await cli(env, 'credits', 'grant', '--account', accountId!, '--amount', '50');
    t.equal(granted.code, 0, granted.err);
    t.match(granted.out, 'balance 50');
    const badAmount = await cli(env, 'credits', 'grant', '--account', accountId!, '--amount', '-3');
    t.equal(badAmount.code, 2);
    const listed = await cli(env, 'accounts', 'list');
    t.match(listed.out, `${accountId}\tlite\tactive\tAcme`);
    const bad = await cli(env, 'keys', 'create', '--account', 'acct_nope');
    t.equal(bad.code, 1);
    t.match(bad.err, 'no account acct_nope');
    const unknown = await cli(env, 'accounts', 'create', '--plan', 'gold');
    t.equal(unknown.code, 2);
    t.match(unknown.err, 'unknown plan');

    // The key the CLI printed works against a server on the same store.
    const db = await openDb({ databaseUrl: env.DATABASE_URL || undefined, schema: mode === 'postgres' ? schema : undefined, dataDir });
    const app = await startApp(loadConfig({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' }), { db, log: createLogger('silent') });
    try {
      const res = await fetch(`http://127.0.0.1:${app.port}/v1/convert/markdown/html`, {
        method: 'POST', headers: { 'x-api-key': apiKey!, 'content-type': 'application/json' }, body: JSON.stringify({ text: '*hi*' }),
      });
      t.equal(res.status, 200);
      const est = await fetch(`http://127.0.0.1:${app.port}/v1/convert/text/estimate`, {
        method: 'POST', headers: { 'x-api-key': apiKey!, 'content-type': 'application/json' }, body: JSON.stringify({ text: 'x' }),
      });
      t.equal((await est.json() as { balance: number }).balance, 50, 'the server sees the granted credits');
      const set = await (async () => { await app.close(); await db.close(); return cli(env, 'accounts', 'set', '--account', accountId!, '--subscription', 'canceled'); })();
      t.equal(set.code, 0, set.err);
      const keyId = /key (key_\w+)/.exec(key.out)?.[1];
      const revoked = await cli(env, 'keys', 'revoke', '--key-id', keyId!);
      t.equal(revoked.code, 0, revoked.err);
      t.match(revoked.out, `key ${keyId} revoked; running servers may still accept it for up to 5 s`, 'the revocation states the key cache\'s delay');
    } catch (e) {
      await app.close().catch(() => {});
      await db.close().catch(() => {});
      throw e;
    }
  });
}
