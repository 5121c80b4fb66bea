// Paid submits are stored by the group commit (src/jobs/group-commit.ts) as renders are: the
// submits arriving while a commit is in flight share the next transaction — their conversions,
// source files, jobs, reservations' ledger rows and Idempotency-Key claims. Shown by the rows'
// xmin (the id of the transaction that wrote a row version: two transactions never share one),
// with the jobs left queued (the runner is stopped) so that no later update rewrites them.
// A member refused inside a shared transaction (its key taken, its allowance used up, a row that
// breaks the batch) is refused alone, and its reservation is given back; the answer of a
// conversion answered at once is the row as stored, equal to a later read of it.
import t from 'tap';
import { isDependencyDown } from '../../src/errors.js';
import { GroupCommit, KeyTaken, type GroupedConversion } from '../../src/jobs/group-commit.js';
import type { ConversionRow } from '../../src/store/conversions.js';
import { PG_URL, startWorld, type World } from '../helpers/world.js';

const PATH = '/v1/convert/html';
const html = (i: number): { html: string } => ({ html: `<h1>Report ${i}</h1><p>Paid conversion number ${i}.</p>` });

interface Answer { status: number; body: Record<string, unknown> & { id: string; status: string; async_reason: string | null } }

async function submit(w: World, i: number, key: string): Promise<Answer> {
  const res = await w.req('POST', PATH, { json: html(i), headers: { 'Idempotency-Key': key, Prefer: 'respond-async' } });
  return { status: res.status, body: await res.json() as Answer['body'] };
}

/** Waits for `done` (a bound only a hang reaches). */
async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 3000 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!done()) throw new Error(`never happened: ${what}`);
}

/** Holds the account's monthly counter row locked from a connection of the test's own: the
 *  group commit in flight waits on it, and every submit arriving meanwhile queues behind it. */
async function holdCounter(w: World, accountId: string): Promise<() => Promise<void>> {
  let release!: () => void;
  const released = new Promise<void>((r) => { release = r; });
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => { locked = r; });
  const holder = w.db.sql.begin(async (tx) => {
    await tx`select files from monthly_usage where account_id = ${accountId}
             and month = date_trunc('month', now() at time zone 'utc')::date for update`;
    locked();
    await released;
  });
  await isLocked;
  return async () => { release(); await holder; };
}

t.test('paid submits arriving during a commit share one transaction: rows, jobs, reservations, key claims', async (t) => {
  // The server on a pool of its own: the test's lock holds none of its connections.
  const w = await startWorld('postgres', {}, { appDatabaseUrl: PG_URL });
  t.teardown(() => w.close());
  const svc = w.app.deps.conversions;
  await svc.runner!.stop(0); // jobs stay queued: their rows are not rewritten
  const first = await submit(w, 0, 'key-0'); // makes the month's counter row
  t.equal(first.status, 202);

  const N = 6;
  const release = await holdCounter(w, w.accountId);
  const pending = Array.from({ length: N }, (_, i) => submit(w, i + 1, `key-${i + 1}`));
  // One is in the commit waiting for the lock, the others wait for the next commit.
  await until(() => svc.group.waiting === N - 1, `${N - 1} submits waiting for the next commit`);
  const batchesBefore = svc.group.stats.batches;
  await release();
  const answers = await Promise.all(pending);
  t.same(answers.map((a) => a.status), Array(N).fill(202), 'each answered 202 at once');
  t.ok(answers.every((a) => a.body.async_reason === 'respond_async' && a.body.status === 'queued'));
  t.equal(svc.group.stats.batches - batchesBefore, 2, `${N} paid submits stored in two transactions`);

  const ids = answers.map((a) => a.body.id);
  const rows = await w.db.sql`
    select c.id, c.xmin::text as conv, f.xmin::text as file, j.xmin::text as job, l.xmin::text as ledger, k.xmin::text as claim,
           l.amount, c.credits_reserved
    from conversions c
    join files f on f.conversion_id = c.id and f.role = 'source'
    join jobs j on j.conversion_id = c.id
    join ledger l on l.conversion_id = c.id and l.kind = 'reserve'
    join idempotency_keys k on k.conversion_id = c.id
    where c.id = any(${w.db.sql.array(ids)}::text[])`;
  t.equal(rows.length, N, 'every conversion has its source, job, reserve row and key claim');
  for (const r of rows) {
    t.same([r.file, r.job, r.ledger, r.claim], [r.conv, r.conv, r.conv, r.conv], `${r.id}: all its rows written by one transaction`);
    t.equal(-Number(r.amount), Number(r.credits_reserved), `${r.id}: the ledger reserves what the conversion says`);
    t.ok(Number(r.credits_reserved) > 0, 'a paid conversion reserved credits');
  }
  const byTransaction = new Map<string, number>();
  for (const r of rows) byTransaction.set(r.conv as string, (byTransaction.get(r.conv as string) ?? 0) + 1);
  t.same([...byTransaction.values()].sort(), [1, N - 1], 'the one in flight alone, every other in the next transaction');

  // The answers are the rows as stored: a read shows the same (but for the balance of the
  // moment each answer was given: others reserved since).
  for (const a of answers) {
    const read = await (await w.req('GET', `/v1/conversions/${a.body.id}`)).json() as Answer['body'];
    const strip = (c: Answer['body']) => ({ ...c, usage: { ...(c.usage as object), credits_remaining: 0 } });
    t.same(strip(a.body), strip(read), `${a.body.id}: the answer is the stored conversion`);
  }

  // Retries with the same keys create nothing and name the same conversions.
  const [{ n: before }] = await w.db.sql`select count(*)::int as n from conversions`;
  const replays = await Promise.all(Array.from({ length: N }, (_, i) => w.req('POST', PATH,
    { json: html(i + 1), headers: { 'Idempotency-Key': `key-${i + 1}`, Prefer: 'respond-async' } })));
  t.same(replays.map((r) => r.headers.get('idempotent-replayed')), Array(N).fill('true'));
  t.same(await Promise.all(replays.map(async (r) => ((await r.json()) as { id: string }).id)), ids, 'each retry names its conversion');
  const [{ n: after }] = await w.db.sql`select count(*)::int as n from conversions`;
  t.equal(after, before, 'no conversion was created by a retry');
});

t.test('a conversion answered at once is answered as stored, equal to a read of it', async (t) => {
  const w = await startWorld('postgres');
  t.teardown(() => w.close());
  await w.app.deps.conversions.runner!.stop(0);
  const res = await w.req('POST', `${PATH}?wait=0`, { json: { ...html(1), metadata: { ref: 'r-1' } } });
  t.equal(res.status, 202);
  const answered = await res.json() as Answer['body'];
  t.equal(answered.async_reason, 'respond_async');
  const read = await (await w.req('GET', `/v1/conversions/${answered.id}`)).json();
  t.same(answered, read, 'field by field, the balance included');
  const [row] = await w.db.sql`select async_reason, xmin::text as x, (select xmin::text from ledger where conversion_id = ${answered.id}) as l
                               from conversions where id = ${answered.id}`;
  t.equal(row!.async_reason, 'respond_async');
  t.equal(row!.x, row!.l, 'the reason was written by the insert, not by an update after it');
});

t.test('paid submits past the monthly allowance in one burst: exactly the allowance admitted, every refused reservation given back', async (t) => {
  const w = await startWorld('postgres', { PLAN_OVERRIDES: JSON.stringify({ pro: { filesPerMonth: 4, requestsPerMinute: 1000, concurrency: 100 } }) });
  t.teardown(() => w.close());
  const { accountId, key } = await w.newKey({ plan: 'pro' });
  const gate = w.app.deps.gate;
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) =>
    w.req('POST', `${PATH}?wait=0`, { key, json: html(i) }).then(async (r) => ({ status: r.status, body: await r.json() as { error?: string; id?: string } }))));
  t.equal(answers.filter((a) => a.status === 202).length, 4, 'exactly the allowance is admitted');
  const refused = answers.filter((a) => a.status === 403);
  t.equal(refused.length, 8);
  for (const a of refused) t.equal(a.body.error, 'upload_limit_exceeded');
  const [usage] = await w.db.sql`select files from monthly_usage where account_id = ${accountId}`;
  t.equal(Number(usage!.files), 4);
  const reserves = await w.db.sql`select conversion_id from ledger where account_id = ${accountId} and kind = 'reserve'`;
  t.equal(reserves.length, 4, 'a reserve row for each admitted conversion only');
  // Every job runs and settles; then the gate holds nothing and agrees with the ledger.
  for (const a of answers.filter((x) => x.status === 202)) {
    for (let i = 0; i < 1500; i++) {
      const [c] = await w.db.sql`select status from conversions where id = ${a.body.id!}`;
      if (c!.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  for (let i = 0; i < 1500 && (await gate.running(accountId)) !== 0; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(await gate.running(accountId), 0, 'no reservation is left in the gate');
  const [l] = await w.db.sql`select coalesce(sum(amount), 0)::int as n from ledger where account_id = ${accountId}`;
  t.equal(await w.app.deps.ledger.balance(accountId), Number(l!.n), 'the gate\'s balance is the ledger\'s');
});

/** A queued conversion with one source and its job, as persist builds it. */
function queued(id: string, accountId: string, claim?: string): GroupedConversion {
  const now = new Date();
  const row: ConversionRow = {
    id, account_id: accountId, name: 'a.html', endpoint: 'html', operation: 'parse', status: 'queued', async_reason: null,
    options: {}, metadata: null, store: false, credits_reserved: 3, credits_charged: 0, created_at: now, completed_at: null, expires_at: null,
  };
  return {
    row, files: [{ id: `${id}_src`, position: 0, role: 'source', name: 'a.html', mime: 'text/html', status: 'queued', bytes: 10, pages: 1, credits: 3, blob: `x/${id}` }],
    monthlyFiles: 1, monthlyLimit: 1000, reserved: 3, jobs: [{ id: `${id}_job`, conversionId: id, sourceId: `${id}_src`, accountId, owner: null }],
    claim: claim === undefined ? undefined : { endpoint: 'html', key: claim, fingerprint: 'f' },
  };
}

t.test('in a shared transaction a taken key or a breaking row refuses its member alone', async (t) => {
  const w = await startWorld('postgres');
  t.teardown(() => w.close());
  const group = new GroupCommit(w.db.sql);
  const acc = w.accountId;
  // The first add commits alone (it starts the flush); the others wait for it and share the next.
  const firstDone = group.add(queued('conv_g0', acc, 'k0'));
  const members = {
    a: queued('conv_ga', acc, 'k1'),
    sameKey: queued('conv_gb', acc, 'k1'), // the key a claims earlier in the batch
    takenKey: queued('conv_gc', acc, 'k0'), // the key the first conversion committed
    breaking: queued('conv_g0', acc), // the first conversion's id again: the batch's insert fails
    e: queued('conv_ge', acc),
  };
  const outcomes = await Promise.allSettled(Object.values(members).map((m) => group.add(m)));
  await firstDone;
  const [a, sameKey, takenKey, breaking, e] = outcomes;
  t.equal(a!.status, 'fulfilled');
  t.equal(e!.status, 'fulfilled');
  t.ok(sameKey!.status === 'rejected' && sameKey.reason instanceof KeyTaken, 'a key claimed by an earlier member: KeyTaken');
  t.ok(takenKey!.status === 'rejected' && takenKey.reason instanceof KeyTaken, 'a key claimed by a committed conversion: KeyTaken');
  t.ok(breaking!.status === 'rejected' && !(breaking.reason instanceof KeyTaken) && !isDependencyDown(breaking.reason),
    'the row that broke the batch fails alone, as the error it is');
  const stored = await w.db.sql`select c.id, (select count(*)::int from jobs j where j.conversion_id = c.id) as jobs,
      (select count(*)::int from ledger l where l.conversion_id = c.id and l.kind = 'reserve') as reserves
    from conversions c where account_id = ${acc} order by id`;
  t.same(stored.map((r) => [r.id, r.jobs, r.reserves]), [['conv_g0', 1, 1], ['conv_ga', 1, 1], ['conv_ge', 1, 1]],
    'the others are stored with their job and reservation, once');
  const claims = await w.db.sql`select key, conversion_id from idempotency_keys where account_id = ${acc} order by key`;
  t.same(claims.map((c) => [c.key, c.conversion_id]), [['k0', 'conv_g0'], ['k1', 'conv_ga']]);
  const [usage] = await w.db.sql`select files from monthly_usage where account_id = ${acc}`;
  t.equal(Number(usage!.files), 3, 'the month counts the stored conversions only');
});

for (const threads of ['1', '2']) {
  t.test(`a paid conversion that finishes inside the wait is answered as its jobs recorded it, equal to a read (HTTP_THREADS=${threads})`, async (t) => {
    const w = await startWorld('postgres', { HTTP_THREADS: threads });
    t.teardown(() => w.close());
    const res = await w.req('POST', PATH, { json: { htmls: ['<h1>One</h1><p>first</p>', '<h1>Two</h1><p>second</p>'], metadata: { ref: 'two' } } });
    t.equal(res.status, 200);
    const answered = await res.json() as Answer['body'] & { files: Array<{ role: string; status: string; content?: string }> };
    t.equal(answered.status, 'completed');
    t.equal(answered.files.filter((f) => f.role === 'output').length, 2, 'both sources\' outputs are in the answer');
    t.match(answered.files.find((f) => f.role === 'output')!.content, /# One/);
    const read = await (await w.req('GET', `/v1/conversions/${answered.id}`)).json();
    t.same(answered, read, 'field by field, the charge and the balance included');
  });
}
