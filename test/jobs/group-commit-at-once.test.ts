// The group commit sends a batch whole, in one round trip, when nothing in it needs a decision
// read from the database first; otherwise (an account past its allowance, a key already held, a
// finished conversion whose account subscribes to webhooks) the attempt rolls back and the batch
// is stored the careful way. Shown with the real client counted: a batch sent at once takes a
// reserved connection and no transaction of the driver's; the careful path opens one. Either
// way the rows, the month's count and the refusals are exactly those of the careful path alone.
// A job its process starts at once is inserted claimed by it, on either path.
import t from 'tap';
import type { Sql } from '../../src/store/db.js';
import { GroupCommit, KeyTaken, type GroupedConversion } from '../../src/jobs/group-commit.js';
import { claimNext, LEASE_S } from '../../src/jobs/queue.js';
import { insertConversion, type ConversionRow } from '../../src/store/conversions.js';
import { startWorld, storeModes, type World } from '../helpers/world.js';

/** The world's client with its reserved connections and driver transactions counted. */
function counted(w: World): { sql: Sql; calls: { reserve: number; begin: number } } {
  const calls = { reserve: 0, begin: 0 };
  const sql = new Proxy(w.db.sql, {
    get(target, prop, receiver) {
      if (prop === 'begin' || prop === 'reserve') {
        const method = target[prop] as (...a: unknown[]) => unknown;
        return (...args: unknown[]) => { calls[prop]++; return method.apply(target, args); };
      }
      return Reflect.get(target, prop, receiver);
    },
  }) as Sql;
  return { sql, calls };
}

/** A conversion as persist builds it: queued with its job, or a finished render. */
function member(id: string, accountId: string, opts: { claim?: string; finished?: boolean; limit?: number; owner?: string } = {}): GroupedConversion {
  const now = new Date();
  const row: ConversionRow = {
    id, account_id: accountId, name: 'a.md', endpoint: 'markdown/html', operation: opts.finished ? 'render' : 'parse',
    status: opts.finished ? 'completed' : 'queued', async_reason: null, options: {}, metadata: null, store: false,
    credits_reserved: opts.finished ? 0 : 3, credits_charged: 0, created_at: now, completed_at: opts.finished ? now : null, expires_at: null,
  };
  return {
    row,
    files: [{ id: `${id}_src`, position: 0, role: 'source', name: 'a.md', mime: 'text/markdown', status: opts.finished ? 'completed' : 'queued',
      bytes: 10, pages: 1, credits: 3, content: `# Note ${id}` }],
    monthlyFiles: 1, monthlyLimit: opts.limit ?? 1000,
    reserved: opts.finished ? undefined : 3,
    jobs: opts.finished ? undefined : [{ id: `${id}_job`, conversionId: id, sourceId: `${id}_src`, accountId, owner: opts.owner ?? null }],
    claim: opts.claim === undefined ? undefined : { endpoint: 'markdown/html', key: opts.claim, fingerprint: 'f' },
  };
}

async function monthOf(w: World, accountId: string): Promise<number> {
  const [usage] = await w.db.sql`select files from monthly_usage where account_id = ${accountId}`;
  return Number(usage?.files ?? 0);
}

async function storedIds(w: World, accountId: string): Promise<string[]> {
  const rows = await w.db.sql`select id from conversions where account_id = ${accountId} order by id`;
  return rows.map((r) => r.id as string);
}

for (const mode of storeModes()) {
  t.test(`${mode}: a batch with nothing to decide is sent at once, rows, jobs, reservations, keys and count included`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    const { sql, calls } = counted(w);
    const group = new GroupCommit(sql);
    const { accountId: other } = await w.newKey();
    await Promise.all([
      group.add(member('conv_a1', w.accountId, { claim: 'k1' })),
      group.add(member('conv_a2', w.accountId, { finished: true })),
      group.add(member('conv_a3', other, { claim: 'k1' })), // the same key of another account is its own
    ]);
    t.same(calls, { reserve: 2, begin: 0 }, 'two batches (the first add flushes alone), both sent at once');
    t.same({ batches: group.stats.batches, conversions: group.stats.conversions }, { batches: 2, conversions: 3 });
    t.same(await storedIds(w, w.accountId), ['conv_a1', 'conv_a2']);
    t.same(await storedIds(w, other), ['conv_a3']);
    t.equal(await monthOf(w, w.accountId), 2);
    t.equal(await monthOf(w, other), 1);
    const jobs = await w.db.sql`select conversion_id from jobs order by conversion_id`;
    t.same(jobs.map((j) => j.conversion_id), ['conv_a1', 'conv_a3'], 'a job for each queued conversion, none for the render');
    const reserves = await w.db.sql`select conversion_id, amount from ledger where kind = 'reserve' order by conversion_id`;
    t.same(reserves.map((r) => [r.conversion_id, Number(r.amount)]), [['conv_a1', -3], ['conv_a3', -3]]);
    const keys = await w.db.sql`select account_id, key, conversion_id from idempotency_keys order by conversion_id`;
    t.same(keys.map((k) => [k.account_id, k.key, k.conversion_id]), [[w.accountId, 'k1', 'conv_a1'], [other, 'k1', 'conv_a3']]);
  });

  t.test(`${mode}: a job its process starts at once is inserted claimed by it; one left for capacity is queued`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    await w.app.deps.conversions.runner!.stop(0); // the world's own runner would poll the queued job
    const { sql, calls } = counted(w);
    const group = new GroupCommit(sql);
    // The first batch is sent at once; the second passes the allowance and goes the careful way.
    await Promise.all([
      group.add(member('conv_j1', w.accountId, { owner: 'runner-a' })),
      group.add(member('conv_j2', w.accountId)),
    ]);
    const careful = await Promise.allSettled([
      group.add(member('conv_j3', w.accountId, { owner: 'runner-a', limit: 4 })),
      group.add(member('conv_j4', w.accountId, { owner: 'runner-a', limit: 4 })),
      group.add(member('conv_j5', w.accountId, { limit: 4 })),
    ]);
    t.same(careful.map((o) => o.status), ['fulfilled', 'fulfilled', 'rejected'], 'the fifth file is past the allowance of 4');
    t.ok(calls.begin >= 1, 'some were stored the careful way');
    const rows = await w.db.sql`select conversion_id, status, lease_owner, attempts,
        lease_until > now() + make_interval(secs => ${LEASE_S - 5}) and lease_until <= now() + make_interval(secs => ${LEASE_S}) as leased
      from jobs order by conversion_id`;
    t.same(rows.map((r) => [r.conversion_id, r.status, r.lease_owner, r.attempts, r.leased]), [
      ['conv_j1', 'running', 'runner-a', 1, true],
      ['conv_j2', 'queued', null, 0, null],
      ['conv_j3', 'running', 'runner-a', 1, true],
      ['conv_j4', 'running', 'runner-a', 1, true],
    ], 'claimed in the insert, the lease on the database\'s clock; the others queued');
    const taken = await claimNext(w.db.sql, 'runner-b', 10);
    t.same(taken.map((j) => j.conversion_id), ['conv_j2'], 'another runner can take only the queued one');
  });

  t.test(`${mode}: a batch past an allowance is rolled back and admitted in arrival order, the count exact`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    const { sql, calls } = counted(w);
    const group = new GroupCommit(sql);
    await group.add(member('conv_b0', w.accountId, { limit: 3 }));
    const outcomes = await Promise.allSettled(['conv_b1', 'conv_b2', 'conv_b3'].map((id) => group.add(member(id, w.accountId, { limit: 3 }))));
    t.same(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'rejected']);
    t.match((outcomes[2] as PromiseRejectedResult).reason, { code: 'upload_limit_exceeded' });
    // b0 alone, then b1 alone (it starts the flush), then b2 and b3 together: past the allowance.
    t.same(calls, { reserve: 3, begin: 1 }, 'the last batch was tried at once, then stored carefully');
    t.same(await storedIds(w, w.accountId), ['conv_b0', 'conv_b1', 'conv_b2']);
    t.equal(await monthOf(w, w.accountId), 3, 'the attempt at once left nothing counted');
  });

  t.test(`${mode}: a key held by a committed conversion refuses its member alone, after the attempt at once`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    const { sql, calls } = counted(w);
    const group = new GroupCommit(sql);
    await group.add(member('conv_c0', w.accountId, { claim: 'held' }));
    const outcomes = await Promise.allSettled([
      group.add(member('conv_c1', w.accountId, { claim: 'held' })),
      group.add(member('conv_c2', w.accountId, { claim: 'fresh' })),
    ]);
    t.ok(outcomes[0]!.status === 'rejected' && outcomes[0].reason instanceof KeyTaken, 'the held key: KeyTaken');
    t.equal(outcomes[1]!.status, 'fulfilled');
    t.ok(calls.begin >= 1, 'the careful path decided');
    t.same(await storedIds(w, w.accountId), ['conv_c0', 'conv_c2']);
    t.equal(await monthOf(w, w.accountId), 2);
    const [claim] = await w.db.sql`select conversion_id from idempotency_keys where key = 'held'`;
    t.equal(claim!.conversion_id, 'conv_c0', 'the claim stays with its first conversion');
  });

  t.test(`${mode}: a member whose account is gone is refused alone, after the attempt at once`, async (t) => {
    // Conversions have no foreign key on their account (migration 0016): the batch locks its
    // accounts once and refuses the members of one deleted since its request was authenticated.
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    const { sql, calls } = counted(w);
    const group = new GroupCommit(sql);
    const { accountId: gone } = await w.newKey();
    await w.db.sql`delete from accounts where id = ${gone}`;
    const first = group.add(member('conv_e0', w.accountId)); // in flight: the next two wait and go together
    const outcomes = await Promise.allSettled([
      group.add(member('conv_e1', gone)),
      group.add(member('conv_e2', w.accountId, { finished: true })),
    ]);
    await first;
    t.equal(outcomes[0]!.status, 'rejected');
    t.match((outcomes[0] as PromiseRejectedResult).reason, { code: 'unauthorized', status: 401 });
    t.equal(outcomes[1]!.status, 'fulfilled', 'the other member is stored');
    t.ok(calls.begin >= 1, 'the careful path decided');
    t.same(await storedIds(w, gone), [], 'nothing stored for the account that is gone');
    t.same(await storedIds(w, w.accountId), ['conv_e0', 'conv_e2']);
    const left = await w.db.sql`select (select count(*)::int from files where account_id = ${gone}) as files,
      (select count(*)::int from jobs where account_id = ${gone}) as jobs,
      (select count(*)::int from ledger where conversion_id = 'conv_e1') as ledger,
      (select count(*)::int from monthly_usage where account_id = ${gone}) as month`;
    t.same(left[0], { files: 0, jobs: 0, ledger: 0, month: 0 }, 'no file, job, reservation or counter row for it');
    const alone = await group.add(member('conv_e3', gone)).then(() => 'stored', (err: unknown) => err);
    t.match(alone, { code: 'unauthorized' }, 'alone in its batch, the same');
    const single = await insertConversion(w.db.sql, {
      id: 'conv_e4', accountId: gone, name: 'a.pdf', endpoint: 'pdf', operation: 'parse', options: {}, metadata: null, store: false,
      createdAt: new Date(), expiresAt: null, creditsReserved: 0,
    }, []).then(() => 'stored', (err: unknown) => err);
    t.match(single, { code: 'unauthorized' }, 'a conversion stored in a transaction of its own, the same');
    t.same(await storedIds(w, gone), []);
  });

  t.test(`${mode}: a finished conversion of a subscribed account goes the careful way and queues its event`, async (t) => {
    const w = await startWorld(mode, { ALLOW_PRIVATE_NETWORK: '1' });
    t.teardown(() => w.close());
    const hook = await w.req('POST', '/v1/webhooks', { json: { url: 'http://127.0.0.1:9/hook', eventTypes: ['conversion.completed'] } });
    t.equal(hook.status, 201);
    const { sql, calls } = counted(w);
    const group = new GroupCommit(sql);
    await group.add(member('conv_d1', w.accountId)); // queued: no event yet, sent at once
    t.same(calls, { reserve: 1, begin: 0 });
    await group.add(member('conv_d2', w.accountId, { finished: true }));
    t.same(calls, { reserve: 2, begin: 1 }, 'tried at once, then stored with its event');
    const events = await w.db.sql`select conversion_id, type from webhook_events`;
    t.same(events.map((e) => [e.conversion_id, e.type]), [['conv_d2', 'conversion.completed']]);
    t.same(await storedIds(w, w.accountId), ['conv_d1', 'conv_d2']);
    t.equal(await monthOf(w, w.accountId), 2);
  });
}

// Every batch of an account updates its counter row, so two batches of one account (two acceptor
// threads', or two processes') commit one after the other from the moment the first takes that
// row. Sent at once, a batch writes its rows first and takes the counter row last, just before
// its COMMIT: a batch waiting for the row has already inserted its rows meanwhile.
t.test('postgres: a batch sent at once writes its rows before it takes its account\'s counter row', async (t) => {
  const w = await startWorld('postgres');
  t.teardown(() => w.close());
  const group = new GroupCommit(w.db.sql);
  await group.add(member('conv_c1', w.accountId)); // the counter row exists from here on
  const holder = await w.db.sql.reserve();
  t.teardown(() => holder.release());
  const [{ pid: holderPid }] = await holder`select pg_backend_pid() as pid`;
  await holder`begin`;
  await holder`select files from monthly_usage where account_id = ${w.accountId} for update`;
  const stored = group.add(member('conv_c2', w.accountId));
  // The batch's backend, once it waits for the row the holder has (blocked by the holder: not
  // a backend of another test file sharing the database).
  let waiting: { pid: number; query: string } | undefined;
  while (!waiting) {
    const [row] = await w.db.sql`select pid, query from pg_stat_activity
      where ${holderPid}::int = any(pg_blocking_pids(pid))`;
    if (row) waiting = { pid: Number(row.pid), query: row.query as string };
    else await new Promise((r) => setTimeout(r, 10));
  }
  t.match(waiting.query, /insert into monthly_usage/, 'it waits at the statement that counts the month');
  const held = await w.db.sql`select c.relname from pg_locks l join pg_class c on c.oid = l.relation
    where l.pid = ${waiting.pid} and l.granted and l.mode = 'RowExclusiveLock' and c.relname in ('conversions', 'files', 'ledger', 'jobs')
    order by c.relname`;
  t.same(held.map((r) => r.relname), ['conversions', 'files', 'jobs', 'ledger'], 'its conversion, file, reservation and job were inserted before it waited');
  await holder`commit`;
  await stored;
  t.same(await storedIds(w, w.accountId), ['conv_c1', 'conv_c2']);
  t.equal(await monthOf(w, w.accountId), 2, 'the month counted once for each');
  t.same({ batches: group.stats.batches, conversions: group.stats.conversions }, { batches: 2, conversions: 2 }, 'both sent at once');
});
