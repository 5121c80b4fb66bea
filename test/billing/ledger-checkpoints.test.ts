// An account's balance read from its ledger checkpoint and the rows since (migration 0012,
// ledgerBalance / checkpointBalance) is the sum of all its rows, whatever the checkpoint saw:
// rows of a transaction still open when it was taken count once it commits, and never twice;
// rows rolled back never count. On Postgres (a schema of this file's own) and on the embedded
// store; and the mending sweep moves up the checkpoint of an account active in the server.
import t from 'tap';
import type { Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { openDb, type Db, type Sql } from '../../src/store/db.js';
import { createAccount } from '../../src/store/accounts.js';
import { CHECKPOINT_ROWS, checkpointBalance, ledgerBalance, readLedger } from '../../src/billing/ledger.js';
import { PG_URL, startWorld } from '../helpers/world.js';
import { seedEmbedded } from '../helpers/embedded-template.js';

async function fullSum(sql: Sql, accountId: string): Promise<number> {
  const [r] = await sql`select coalesce(sum(amount), 0)::int as s from ledger where account_id = ${accountId}`;
  return r!.s as number;
}

/** The open reservations as the whole ledger says: reserved, not released. */
async function openByFullScan(sql: Sql, accountId: string): Promise<Array<{ conversionId: string; credits: number }>> {
  const rows = await sql`select conversion_id as c, -min(amount)::int as n from ledger
    where account_id = ${accountId} and kind in ('reserve', 'release') group by conversion_id having bool_and(kind = 'reserve')`;
  return rows.map((r) => ({ conversionId: r.c as string, credits: r.n as number })).sort((a, b) => a.conversionId.localeCompare(b.conversionId));
}

/** readLedger's view, reservations in a stable order. */
async function read(sql: Sql, accountId: string): Promise<{ balance: number; reservations: Array<{ conversionId: string; credits: number }> }> {
  const v = await readLedger(sql, accountId);
  return { balance: v.balance, reservations: [...v.reservations].sort((a, b) => a.conversionId.localeCompare(b.conversionId)) };
}

async function row(sql: Sql, accountId: string, conversionId: string, kind: 'reserve' | 'release' | 'charge', amount: number): Promise<void> {
  await sql`insert into ledger (account_id, conversion_id, kind, amount) values (${accountId}, ${conversionId}, ${kind}, ${amount})`;
}

async function grants(sql: Sql, accountId: string, amounts: number[]): Promise<void> {
  for (const amount of amounts) await sql`insert into ledger (account_id, kind, amount) values (${accountId}, 'grant', ${amount})`;
}

async function checkpointOf(sql: Sql, accountId: string): Promise<{ horizon: string; balance: number } | undefined> {
  const [r] = await sql`select horizon::text as horizon, balance::int as balance from ledger_checkpoints where account_id = ${accountId}`;
  return r ? { horizon: r.horizon as string, balance: r.balance as number } : undefined;
}

/**
 * Takes one checkpoint once the cluster's horizon (its oldest running transaction) is past the
 * transaction `past`, by default that of the newest of the account's rows this session sees, and
 * answers the balance the checkpoint then holds. Another test file's open transaction may hold
 * the horizon back for a while: the wait is for that event, with no deadline (the file's timeout
 * bounds it); what the checkpoint holds is the caller's assertion. The embedded store has no
 * other transaction.
 */
async function checkpointAfter(sql: Sql, accountId: string, minRows: number, past?: string): Promise<number | undefined> {
  const [newest] = await sql`select xid::text as x from ledger where account_id = ${accountId} order by xid desc limit 1`;
  const target = past ?? (newest?.x as string | undefined) ?? '0';
  for (;;) {
    const [h] = await sql`select pg_snapshot_xmin(pg_current_snapshot()) > ${target}::xid8 as past`;
    if (h!.past) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await checkpointBalance(sql, accountId, minRows);
  return (await checkpointOf(sql, accountId))?.balance;
}

/** The transaction id of the account's row of `amount` (one such row). */
async function xidOf(sql: Sql, accountId: string, where: { amount: number; kind?: string }): Promise<string> {
  const [r] = await sql`select xid::text as x from ledger where account_id = ${accountId} and amount = ${where.amount}
    and kind = ${where.kind ?? 'grant'}`;
  return r!.x as string;
}

async function postgresStore(t: Test): Promise<Db> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-checkpoints-'));
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const db = await openDb({ databaseUrl: PG_URL, dataDir, schema, max: 4 });
  t.teardown(async () => {
    await db.close();
    const admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop schema if exists "${schema}" cascade`);
    await admin.end();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return db;
}

async function embeddedStore(t: Test): Promise<Db> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-checkpoints-'));
  await seedEmbedded(dataDir);
  const db = await openDb({ dataDir });
  t.teardown(async () => {
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return db;
}

for (const [mode, open] of [['postgres', postgresStore], ['embedded', embeddedStore]] as const) {
  t.test(`a checkpointed balance is the sum of every row (${mode})`, async (t) => {
    const { sql } = await open(t);
    const accountId = (await createAccount(sql, { name: 'checkpoints', plan: 'pro' })).id;
    // Rows from before the migration carry transaction 0: counted while there is no checkpoint.
    await sql`insert into ledger (account_id, kind, amount, xid) values (${accountId}, 'grant', 40, '0')`;
    await grants(sql, accountId, [5, 7]);
    t.same(await ledgerBalance(sql, accountId), { balance: 52, since: 3 }, 'no checkpoint: every row is read');

    t.equal(await checkpointBalance(sql, accountId, 4), false, 'fewer rows than asked: no checkpoint');
    t.equal(await checkpointOf(sql, accountId), undefined);
    t.equal(await checkpointAfter(sql, accountId, 3), 52, 'the checkpoint holds the rows below its horizon');
    t.same(await ledgerBalance(sql, accountId), { balance: 52, since: 0 }, 'nothing read past the checkpoint');

    await grants(sql, accountId, [11, 13]);
    await sql`insert into ledger (account_id, conversion_id, kind, amount) values (${accountId}, ${`conv_${mode}_1`}, 'reserve', -6)`;
    t.same(await ledgerBalance(sql, accountId), { balance: 70, since: 3 }, 'the checkpoint plus the rows since');
    t.equal(await checkpointAfter(sql, accountId, 1), 70, 'moved up');
    t.same(await ledgerBalance(sql, accountId), { balance: 70, since: 0 });
    t.equal((await checkpointOf(sql, accountId))?.balance, await fullSum(sql, accountId));

    // Inside a transaction, its own rows count; rolled back, they never do.
    await sql.begin(async (tx) => {
      const s = tx as unknown as Sql;
      await grants(s, accountId, [1000]);
      t.equal((await ledgerBalance(s, accountId)).balance, 1070, 'a transaction sees its own rows');
      await s`select 1/0`; // rolls the transaction back
    }).catch(() => {});
    t.equal((await ledgerBalance(sql, accountId)).balance, 70, 'rolled-back rows never count');
    t.equal(await checkpointAfter(sql, accountId, 0), 70);
    t.same(await ledgerBalance(sql, accountId), { balance: 70, since: 0 }, 'nor after a checkpoint past them');
  });
}

for (const [mode, open] of [['postgres', postgresStore], ['embedded', embeddedStore]] as const) {
  t.test(`open reservations read from a checkpoint and the rows since are the whole ledger's (${mode})`, async (t) => {
    const { sql } = await open(t);
    const accountId = (await createAccount(sql, { name: 'checkpoints', plan: 'pro' })).id;
    const c = (n: number): string => `conv_${mode}_open_${n}`;
    await grants(sql, accountId, [100]);
    await row(sql, accountId, c(1), 'reserve', -5);
    await row(sql, accountId, c(2), 'reserve', -3);
    await row(sql, accountId, c(3), 'reserve', -2);
    await row(sql, accountId, c(3), 'release', 2);
    await row(sql, accountId, c(3), 'charge', -1);
    const before = await read(sql, accountId);
    t.same(before, { balance: 91, reservations: await openByFullScan(sql, accountId) }, 'no checkpoint: every row is read');
    t.same(before.reservations.map((r) => r.conversionId), [c(1), c(2)]);
    t.equal(await checkpointAfter(sql, accountId, 1), 91, 'a checkpoint over them');
    const [cp] = await sql`select pending from ledger_checkpoints where account_id = ${accountId}`;
    t.same((cp!.pending as Array<{ c: string }>).map((p) => p.c).sort(), [c(1), c(2)], 'it keeps the reservations left open, not the settled one');
    t.same(await read(sql, accountId), before, 'read through the checkpoint, the same');

    // One reserved below the horizon is settled above it; another is reserved above it.
    await row(sql, accountId, c(1), 'release', 5);
    await row(sql, accountId, c(1), 'charge', -4);
    await row(sql, accountId, c(4), 'reserve', -7);
    const after = await read(sql, accountId);
    t.same(after, { balance: 91 + 5 - 4 - 7, reservations: await openByFullScan(sql, accountId) }, 'across the horizon, the whole ledger\'s');
    t.same(after.reservations.map((r) => r.conversionId), [c(2), c(4)]);
    t.equal(await checkpointAfter(sql, accountId, 1), 85, 'the next checkpoint');
    t.same(await read(sql, accountId), after, 'and through it');
    t.equal(await fullSum(sql, accountId), 85);
  });
}

t.test('a release whose transaction is older than its reservation\'s is matched across the horizon (postgres)', async (t) => {
  const { sql } = await postgresStore(t);
  const accountId = (await createAccount(sql, { name: 'checkpoints', plan: 'pro' })).id;
  await grants(sql, accountId, [50]);
  const gate = () => {
    let open!: () => void;
    const p = new Promise<void>((resolve) => { open = resolve; });
    return { p, open };
  };
  // A takes a transaction id first and writes the release last; M, between them, stays open
  // while the checkpoint is taken, so the horizon falls between A's rows and B's reservation.
  const aStarted = gate(); const aRelease = gate(); const aDone = gate();
  const mStarted = gate(); const mCommit = gate();
  const a = sql.begin(async (tx) => {
    await grants(tx as unknown as Sql, accountId, [1]);
    aStarted.open();
    await aRelease.p;
    await row(tx as unknown as Sql, accountId, 'conv_inverted', 'release', 4);
  }).then(() => aDone.open());
  await aStarted.p;
  const m = sql.begin(async (tx) => {
    await grants(tx as unknown as Sql, accountId, [2]);
    mStarted.open();
    await mCommit.p;
  });
  await mStarted.p;
  await row(sql, accountId, 'conv_inverted', 'reserve', -4); // B: a later transaction id, committed
  aRelease.open();
  await aDone.p;
  // Rows below the horizon: A's grant and release (and the 50); above: B's reservation, M's grant.
  t.equal(await checkpointAfter(sql, accountId, 1, await xidOf(sql, accountId, { amount: 4, kind: 'release' })), 55, 'a checkpoint between A and B');
  const [cp] = await sql`select pending from ledger_checkpoints where account_id = ${accountId}`;
  t.same(cp!.pending, [{ c: 'conv_inverted', k: 'release', n: 4 }], 'the release waits below for its reservation');
  t.same(await read(sql, accountId), { balance: 51, reservations: [] }, 'released: not open (M not committed yet)');
  mCommit.open();
  await m;
  t.same(await read(sql, accountId), { balance: 53, reservations: await openByFullScan(sql, accountId) });
  t.same(await openByFullScan(sql, accountId), []);
  t.equal(await checkpointAfter(sql, accountId, 1), 53);
  const [last] = await sql`select pending from ledger_checkpoints where account_id = ${accountId}`;
  t.same(last!.pending, [], 'once both are below, nothing is left half done');
});

t.test('rows of a transaction open across a checkpoint count once it commits, once (postgres)', async (t) => {
  const { sql } = await postgresStore(t);
  const accountId = (await createAccount(sql, { name: 'checkpoints', plan: 'pro' })).id;
  await grants(sql, accountId, [100, 200]);
  let wrote!: () => void;
  const written = new Promise<void>((resolve) => { wrote = resolve; });
  let commit!: () => void;
  const committing = new Promise<void>((resolve) => { commit = resolve; });
  // A transaction writes a row and stays open (another connection of the pool)...
  const open = sql.begin(async (tx) => {
    await grants(tx as unknown as Sql, accountId, [30]);
    wrote();
    await committing;
  });
  await written;
  // ... while rows of later transactions commit and a checkpoint is taken over them.
  await grants(sql, accountId, [4]);
  t.equal(await checkpointAfter(sql, accountId, 1, await xidOf(sql, accountId, { amount: 200 })), 300, 'a checkpoint reaches the open transaction');
  // It stays below it: the open row and the one after it wait above the horizon.
  t.equal(await checkpointBalance(sql, accountId, 1), false, 'and goes no higher while it is open');
  t.equal((await checkpointOf(sql, accountId))?.balance, 300);
  t.same(await ledgerBalance(sql, accountId), { balance: 304, since: 1 }, 'the open row is not seen yet');
  commit();
  await open;
  t.same(await ledgerBalance(sql, accountId), { balance: 334, since: 2 }, 'committed, it counts');
  t.equal(await checkpointAfter(sql, accountId, 1), 334);
  t.same(await ledgerBalance(sql, accountId), { balance: 334, since: 0 }, 'and once only, after the next checkpoint');
  t.equal((await checkpointOf(sql, accountId))?.balance, await fullSum(sql, accountId));
});

t.test('checkpoints taken at once keep the highest horizon, each one exact (postgres)', async (t) => {
  const { sql } = await postgresStore(t);
  const accountId = (await createAccount(sql, { name: 'checkpoints', plan: 'pro' })).id;
  const taken: string[] = [];
  // A horizon is the oldest transaction running in the whole cluster: while another test file
  // holds one open from before this account's rows, no checkpoint can cover them and none is
  // taken. The rounds go on until five of them have found a checkpoint.
  let round = 0;
  for (; taken.length < 5; round++) {
    await grants(sql, accountId, [1, 2, 3]);
    await Promise.all([checkpointBalance(sql, accountId, 1), checkpointBalance(sql, accountId, 1), grants(sql, accountId, [10])]);
    t.equal((await ledgerBalance(sql, accountId)).balance, await fullSum(sql, accountId), `round ${round}: the balance is the sum of the rows`);
    const cp = await checkpointOf(sql, accountId);
    if (!cp) {
      await new Promise((r) => setTimeout(r, 50));
      continue;
    }
    taken.push(cp.horizon);
    const [below] = await sql`select coalesce(sum(amount), 0)::int as s from ledger where account_id = ${accountId} and xid < ${cp.horizon}::xid8`;
    t.equal(cp.balance, below!.s, `round ${round}: the checkpoint is the sum of the rows below its horizon`);
  }
  t.same([...taken].sort((a, b) => Number(BigInt(a) - BigInt(b))), taken, 'the horizon never went down');
  t.equal((await ledgerBalance(sql, accountId)).balance, round * 16);
});

t.test('the mending sweep moves up the checkpoint of an account active in the server', async (t) => {
  const w = await startWorld('postgres', { MEND_INTERVAL_S: '1' });
  t.teardown(() => w.close());
  const { key, accountId } = await w.newKey({ credits: 10 });
  const sql = w.db.sql;
  await grants(sql, accountId, Array.from({ length: CHECKPOINT_ROWS }, () => 1));
  // A paid conversion: the account reserved in this process, so the sweep looks at it.
  const res = await w.req('POST', '/v1/convert/text', { key, json: { text: 'one credit' } });
  t.equal(res.status, 200);
  const expected = 10 + CHECKPOINT_ROWS - 1;
  t.equal((await res.json() as { usage: { credits_remaining: number } }).usage.credits_remaining, expected);
  // The sweep runs every second; its checkpoint waits, as any, for the cluster's horizon to pass
  // the rows (another test file's open transaction may hold it back): until it is taken.
  let cp = await checkpointOf(sql, accountId);
  while (!cp) {
    await new Promise((r) => setTimeout(r, 100));
    cp = await checkpointOf(sql, accountId);
  }
  t.ok(cp, 'a checkpoint was taken');
  const [below] = await sql`select coalesce(sum(amount), 0)::int as s, count(*)::int as n from ledger
    where account_id = ${accountId} and xid < ${cp!.horizon}::xid8`;
  t.equal(cp!.balance, below!.s, 'of the rows below its horizon');
  t.ok(below!.n >= CHECKPOINT_ROWS, 'which are at least the rows it waits for');
  const read = await ledgerBalance(sql, accountId);
  t.equal(read.balance, expected, 'the balance read from it is the ledger\'s');
  t.ok(read.since < CHECKPOINT_ROWS, 'read from the rows since, not the whole history');
});
