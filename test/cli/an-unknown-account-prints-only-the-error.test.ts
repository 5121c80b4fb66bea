// An admin command naming an account or key that does not exist prints that error alone — not
// the usage text after it, which says the command line was wrong when it was not — and exits 1.
// A command line that is wrong still gets the usage text (exit 2).
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { PG_URL, dropSchema } from '../helpers/world.js';

const run = promisify(execFile);
const BIN = path.resolve('bin/docpipe.js');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-cli-unknown-'));
const schema = `t_${randomBytes(6).toString('hex')}`;
const env = { ...process.env, DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema, DATA_DIR: dataDir };
t.teardown(async () => {
  rmSync(dataDir, { recursive: true, force: true });
  await dropSchema(schema);
});

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  try {
    const r = await run(process.execPath, [BIN, ...args], { env });
    return { code: 0, out: r.stdout, err: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, out: x.stdout, err: x.stderr };
  }
}

t.test('an unknown account or key is one line of error and exit 1', async (t) => {
  const commands: Array<[string[], string]> = [
    [['credits', 'grant', '--account', 'acct_nope', '--amount', '5'], 'no account acct_nope'],
    [['credits', 'balance', '--account', 'acct_nope'], 'no account acct_nope'],
    [['keys', 'create', '--account', 'acct_nope'], 'no account acct_nope'],
    [['accounts', 'set', '--account', 'acct_nope', '--plan', 'pro'], 'no account acct_nope'],
    [['keys', 'revoke', '--key-id', 'key_nope'], 'no active key key_nope'],
  ];
  for (const [args, message] of commands) {
    const r = await cli(...args);
    t.equal(r.code, 1, `${args.slice(0, 2).join(' ')} exits 1`);
    t.equal(r.err, `docpipe: ${message}\n`, 'and prints the error alone');
    t.equal(r.out, '');
  }
});

t.test('a wrong command line still shows the usage', async (t) => {
  const r = await cli('credits', 'grant', '--account', 'acct_nope');
  t.equal(r.code, 2);
  t.match(r.err, /^docpipe: --amount is required\nUsage: docpipe <command>/);
});
