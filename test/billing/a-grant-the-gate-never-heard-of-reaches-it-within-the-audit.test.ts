// A grant written to the ledger without telling the gate (the admin CLI run without REDIS_URL,
// as README's admin section shows it) reaches the Redis gate at the audit's next pass: the API's
// balance moves from 0 to the grant and a submit refused with 402 before is accepted after. A
// later grant with the Redis settings keeps gate and ledger equal. Both stores; the gate on
// Redis. (The CLI itself runs against Postgres; the embedded store has one process, so there
// the ledger is written with the CLI's own function.)
import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { PG_URL, REDIS_URL, startWorld, storeModes, type World } from '../helpers/world.js';
import { eventually } from '../helpers/until.js';
import { grantCredits, readLedger } from '../../src/billing/ledger.js';

const run = promisify(execFile);
const BIN = path.resolve('bin/docpipe.js');

async function grant(w: World, accountId: string, amount: number, redis: boolean): Promise<string> {
  if (w.mode === 'embedded') {
    await grantCredits(w.db.sql, accountId, amount, 'test', redis ? { url: REDIS_URL, prefix: w.redisPrefix } : undefined);
    return `balance ${(await readLedger(w.db.sql, accountId)).balance}`;
  }
  const [{ schema }] = await w.db.sql<Array<{ schema: string }>>`select current_schema() as schema`;
  const env = { ...process.env, DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema, DATA_DIR: w.dataDir, REDIS_URL: redis ? REDIS_URL : '', REDIS_PREFIX: redis ? w.redisPrefix! : '' };
  const r = await run(process.execPath, [BIN, 'credits', 'grant', '--account', accountId, '--amount', String(amount)], { env });
  return r.stdout;
}

for (const mode of storeModes()) {
  t.test(`a grant without Redis settings reaches the gate (${mode})`, async (t) => {
    const w = await startWorld(mode, { MEND_INTERVAL_S: '1' }, { redis: true });
    t.teardown(() => w.close());
    const a = await w.newKey({ credits: 0 });
    const balance = async (): Promise<number> => {
      const r = await w.req('POST', '/v1/convert/text/estimate', { key: a.key, json: { text: 'x' } });
      return (await r.json() as { balance: number }).balance;
    };
    const submit = (): Promise<Response> => w.req('POST', '/v1/convert/text', { key: a.key, json: { text: 'hello there' } });

    t.equal(await balance(), 0, 'the gate holds the account at 0');
    const refused = await submit();
    t.equal(refused.status, 402, 'a submit is refused for want of credits');
    await refused.arrayBuffer();

    t.match(await grant(w, a.accountId, 5, false), 'balance 5', 'the grant is in the ledger');
    // The audit passes every second here: the bound only a broken audit reaches.
    t.equal(await eventually(balance, 5, 30_000), 5, 'the API shows the grant after an audit pass');
    const accepted = await submit();
    t.equal(accepted.status, 200, 'and a submit is accepted');
    const c = await accepted.json() as { files: Array<{ role: string; format: string | null; content: string | null }> };
    t.equal(c.files.find((f) => f.role === 'output' && f.format === 'markdown')?.content, 'hello there\n');
    t.equal((await readLedger(w.db.sql, a.accountId)).balance, 4, 'the ledger charged 1');

    await grant(w, a.accountId, 2, true);
    t.equal((await readLedger(w.db.sql, a.accountId)).balance, 6);
    t.equal(await eventually(balance, 6, 30_000), 6, 'a grant told to the gate agrees with the ledger too');
  });
}
