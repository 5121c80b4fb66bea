// Postgres restarted under load: the server reaches its database through a relay the test cuts
// (live connections killed, new ones refused) for a few seconds, while workers submit a mix of
// cheap renders, small paid conversions and real documents on the worker pool, some with
// Prefer: respond-async. While it is down every request must answer 503 service_unavailable
// (retryable) within a bounded time, never a 500 and never hang; the process must survive; once
// it is back, every conversion that was answered 200/202 must end terminal, and the credits
// must add up: every reservation settled exactly once, the ledger sum = granted − charged, the
// gate's copy = the ledger.
import t from 'tap';
import type { Test } from 'tap';
import { readFileSync, rmSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Leases short enough that a job whose completion was lost is taken over within the test; the
// job queue reads this once, when it is first imported.
process.env.JOB_LEASE_S = '3';
const { startWorld, HeldExecutor } = await import('../helpers/world.js');
const { startRelay } = await import('../helpers/relay.js');
const { startLoad, acceptedIds, awaitTerminal } = await import('../../bench/chaos/load.js');
const { checkInvariants } = await import('../../bench/chaos/invariants.js');
const { buildReport } = await import('../fixtures/build/docx.js');
const { buildReportPdf } = await import('../fixtures/build/pdf.js');
const { PG_URL } = await import('../helpers/world.js');
const { eventually, untilTerminal } = await import('../helpers/until.js');
const { settleLost } = await import('../../src/jobs/settle.js');
type ConversionContext = import('../../src/jobs/context.js').ConversionContext;
type World = Awaited<ReturnType<typeof startWorld>>;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('Postgres restarted under load: 503 while down, every accepted conversion ends, credits add up', async (t) => {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pgdown-'));
  const relay = await startRelay(Number(new URL(PG_URL).port || 5432));
  const appUrl = new URL(PG_URL);
  appUrl.port = String(relay.port);
  // A waited request answers within 5 s (202 wait_timeout if its conversion is not done), so the
  // load's 20 s client timeout catches hangs, not conversions queued behind the backlog.
  const w = await startWorld('postgres', { PLAN_OVERRIDES: JSON.stringify({ max: { concurrency: 1000 } }), MEND_INTERVAL_S: '1', SYNC_WAIT_DEFAULT_S: '5' },
    { pool: true, plan: 'max', appDatabaseUrl: appUrl.toString() });
  t.teardown(async () => { await relay.restore(); await w.close(); await relay.close(); rmSync(scratch, { recursive: true, force: true }); });
  const second = await w.newKey({ plan: 'max' });
  const accounts = [{ accountId: w.accountId, key: w.key }, second];
  const docx = readFileSync(await buildReport(scratch));
  const pdf = readFileSync(await buildReportPdf(scratch));
  t.ok(relay.connections > 0, 'the server talks to Postgres through the relay');
  // Warm the pool first: its threads' first tasks load the converters, which takes seconds on a
  // busy machine, and requests stuck behind that would keep workers from probing the outage.
  const file = (data: Buffer, name: string, type: string): FormData => {
    const f = new FormData();
    f.append('file', new Blob([data], { type }), name);
    return f;
  };
  const warm = (endpoint: string, body: string | FormData, headers: Record<string, string> = {}) =>
    fetch(`${w.url}/v1/convert/${endpoint}?wait=60`, { method: 'POST', headers: { 'x-api-key': w.key, ...headers }, body });
  const warmed = await Promise.all([
    warm('html', JSON.stringify({ html: '<p>warm</p>' }), { 'content-type': 'application/json' }),
    warm('word', file(docx, 'report.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document')),
    warm('pdf', file(pdf, 'report.pdf', 'application/pdf')),
  ]);
  t.same(warmed.map((r) => r.status), [200, 200, 200], 'the pool converts before the load starts');

  const load = startLoad({
    origins: () => [w.url], accounts, workers: 10, timeoutMs: 20_000, waitS: 5, seed: 11,
    docs: [
      { endpoint: 'word', name: 'report.docx', type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', data: docx },
      { endpoint: 'pdf', name: 'report.pdf', type: 'application/pdf', data: pdf },
    ],
    mix: { markdown: 4, html: 3, text: 1, document: 1, async: 1, idempotent: 1 },
  });
  await sleep(2_500);
  const cutAt = Date.now();
  await relay.cut();
  // Most of the load's workers are inside conversions when the cut comes and wait it out, so
  // three probes of the cheap path keep asking while Postgres is down.
  const probe = startLoad({ origins: () => [w.url], accounts, workers: 3, timeoutMs: 20_000, seed: 12, docs: [], mix: { markdown: 1 } });
  await sleep(4_000);
  await probe.stop();
  const restoredAt = Date.now();
  await relay.restore();
  await sleep(3_000);
  await load.stop();
  const sent = [...load.sent, ...probe.sent];

  await t.test('no request hangs, none answers 500', async (t) => {
    const hung = sent.filter((r) => r.status === -1);
    t.same(hung.map((r) => `${r.op} ${r.ms} ms`), [], 'every request answered inside the client timeout');
    const odd = sent.filter((r) => ![200, 202, 503].includes(r.status));
    t.same(odd.map((r) => `${r.op} → ${r.status} ${r.error ?? ''}`), [], 'only 200, 202 and 503');
  });

  await t.test('while Postgres is down, requests answer 503 service_unavailable, retryable', async (t) => {
    const during = sent.filter((r) => r.startedAt >= cutAt + 200 && r.startedAt + r.ms <= restoredAt);
    t.ok(during.length >= 3, `${during.length} requests were sent and answered during the outage`);
    for (const r of during) {
      if (r.status !== 503 || r.error !== 'service_unavailable' || r.retryable !== true) {
        t.fail(`${r.op} during the outage answered ${r.status} ${r.error ?? ''} retryable=${r.retryable}`);
      }
    }
    const refused = sent.filter((r) => r.status === 503);
    t.ok(refused.every((r) => r.error === 'service_unavailable' && r.retryable === true), 'every 503 is service_unavailable, retryable');
  });

  await t.test('the process survives and is ready again', async (t) => {
    t.equal((await fetch(`${w.url}/healthz`)).status, 200);
    let ready = 0;
    for (let i = 0; i < 50 && ready !== 200; i++) {
      ready = (await fetch(`${w.url}/readyz`)).status;
      if (ready !== 200) await sleep(100);
    }
    t.equal(ready, 200, 'readyz answers 200 once Postgres is back');
    const after = sent.filter((r) => r.startedAt > restoredAt + 1_000);
    t.ok(after.some((r) => r.status === 200), 'requests succeed again after the restore');
  });

  await t.test('every conversion answered 200/202 reaches a terminal status', async (t) => {
    const { live, deleteSent } = acceptedIds(sent);
    t.ok(live.size > 20, `${live.size} conversions were accepted`);
    t.ok(sent.some((r) => r.status === 202), 'some were accepted asynchronously');
    const left = await awaitTerminal(() => w.url, accounts, live, deleteSent, 60_000);
    t.same(left, [], 'none is left queued or running');
  });

  await t.test('credits add up: each reservation settled once, ledger = granted − charged = the gate', async (t) => {
    // What the gate was not told in the outage is mended by the sweeps (every second here).
    let checks = await checkInvariants({ sql: w.db.sql, accountIds: accounts.map((a) => a.accountId), sent, gate: w.app.deps.gate });
    for (let i = 0; i < 50 && checks.some((c) => c.violations > 0); i++) {
      await sleep(500);
      checks = await checkInvariants({ sql: w.db.sql, accountIds: accounts.map((a) => a.accountId), sent, gate: w.app.deps.gate });
    }
    for (const c of checks) t.equal(c.violations, 0, `${c.name} (${c.checked} checked) ${c.examples.join('; ')}`);
    const [paid] = await w.db.sql`select count(*)::int as n from ledger where kind = 'charge'`;
    t.ok(paid!.n > 0, `${paid!.n} conversions were charged`);
  });
});

/** A world whose server reaches Postgres through a relay, with its conversions held in the executor. */
async function heldWorld(t: Test, env: Record<string, string> = {}) {
  const relay = await startRelay(Number(new URL(PG_URL).port || 5432));
  const appUrl = new URL(PG_URL);
  appUrl.port = String(relay.port);
  const held = new HeldExecutor();
  const w = await startWorld('postgres', { MEND_INTERVAL_S: '1', ...env }, { executor: held, appDatabaseUrl: appUrl.toString() });
  t.teardown(async () => { held.release(); await relay.restore(); await w.close(); await held.close(); await relay.close(); });
  return { relay, held, w };
}

/** Submits HTML with respond-async while the executor holds it; resolves once the job runs. */
async function submitHeld(w: World, held: InstanceType<typeof HeldExecutor>): Promise<string> {
  held.hold();
  const res = await w.req('POST', '/v1/convert/html', { json: { html: '<h1>Held</h1><p>Kept in the executor.</p>' }, headers: { prefer: 'respond-async' } });
  if (res.status !== 202) throw new Error(`submit answered ${res.status}: ${await res.text()}`);
  const { id } = await res.json() as { id: string };
  for (let i = 0; i < 100 && held.waitingTasks === 0; i++) await sleep(50);
  if (held.waitingTasks !== 1) throw new Error('the job did not start');
  return id;
}

t.test('a job whose outcome cannot be recorded during a short outage records it when the database is back, in the same attempt', async (t) => {
  const { relay, held, w } = await heldWorld(t);
  const id = await submitHeld(w, held);
  await relay.cut();
  held.release(); // converts now; recording the outcome fails while the relay is cut
  await sleep(1_500);
  await relay.restore();
  const c = await untilTerminal(w, id, 15_000);
  t.equal(c.status, 'completed', 'the conversion completed');
  const [job] = await w.db.sql`select status, attempts from jobs where conversion_id = ${id}`;
  t.same({ status: job!.status, attempts: job!.attempts }, { status: 'done', attempts: 1 }, 'recorded by the first attempt, not converted again');
  const charges = await w.db.sql`select amount from ledger where conversion_id = ${id} and kind = 'charge'`;
  t.equal(charges.length, 1, 'charged once');
});

t.test('a job whose outcome cannot be recorded within its lease is run again once the database is back, not failed', async (t) => {
  const { relay, held, w } = await heldWorld(t);
  const id = await submitHeld(w, held);
  await relay.cut();
  held.release();
  await sleep(5_000); // past the 3 s lease: the first run gives up recording
  await relay.restore();
  const c = await untilTerminal(w, id, 20_000);
  t.equal(c.status, 'completed', 'the conversion completed');
  t.same(c.files.filter((f) => f.role === 'source').map((f) => f.error), [null], 'the outage was not recorded as a failure of the document');
  const [job] = await w.db.sql`select status, attempts from jobs where conversion_id = ${id}`;
  t.equal(job!.status, 'done');
  t.ok(job!.attempts >= 2, `run again (${job!.attempts} attempts)`);
  const rows = await w.db.sql`select kind from ledger where conversion_id = ${id} order by id`;
  t.same(rows.map((r) => r.kind), ['reserve', 'release', 'charge'], 'settled once');
});

t.test('a settle the gate did not hear during an outage is mended by the periodic sweep', async (t) => {
  const { held, w } = await heldWorld(t);
  // The ledger settles in the transaction that ends the conversion; telling the gate right after
  // fails as if its connection went away at that moment.
  const ledger = w.app.deps.ledger;
  const tell = ledger.tell.bind(ledger);
  let lost = 0;
  ledger.tell = async (...args: Parameters<typeof tell>) => {
    if (lost++ === 0) throw Object.assign(new Error('Connection is closed.'), { name: 'Error' });
    return tell(...args);
  };
  const before = await ledger.balance(w.accountId);
  const id = await submitHeld(w, held);
  held.release();
  t.equal((await untilTerminal(w, id, 10_000)).status, 'completed');
  const rows = await w.db.sql`select kind from ledger where conversion_id = ${id} order by id`;
  t.same(rows.map((r) => r.kind), ['reserve', 'release', 'charge'], 'the ledger settled with the status');
  for (let i = 0; i < 400 && lost === 0; i++) await sleep(25);
  t.equal(lost, 1, 'the gate was not told');
  // The sweep (MEND_INTERVAL_S, 1 s here) audits the account and settles the reservation in the gate.
  t.equal(await eventually(() => w.app.deps.gate.running(w.accountId), 0, 5_000), 0, 'the sweep settled it in the gate');
  const [charge] = await w.db.sql`select -amount as n from ledger where conversion_id = ${id} and kind = 'charge'`;
  t.equal(await ledger.balance(w.accountId), before - Number(charge!.n), 'the gate\'s balance moved by the charge only');
});

t.test('a finished conversion left unsettled in the ledger (settled after its commit by an earlier version, which then stopped) is settled by the sweep', async (t) => {
  // The periodic sweep is kept out of the way (once an hour): the state below is made in several
  // steps, and a pass between two of them would mend a half-made state. The test runs the pass.
  const { held, w } = await heldWorld(t, { MEND_INTERVAL_S: '3600' });
  const { ledger, gate } = w.app.deps;
  const id = await submitHeld(w, held);
  held.release();
  t.equal((await untilTerminal(w, id, 10_000)).status, 'completed');
  const [charge] = await w.db.sql`select -amount as n from ledger where conversion_id = ${id} and kind = 'charge'`;
  const [reserve] = await w.db.sql`select -amount as n from ledger where conversion_id = ${id} and kind = 'reserve'`;
  const balance = await ledger.balance(w.accountId);
  const [settled] = await w.db.sql`select settled_at from conversions where id = ${id}`;
  t.ok(settled!.settled_at instanceof Date, 'a conversion settled as it ends is marked settled with its release');
  // What such a version left: the conversion finished a while ago (and, the mark being newer than
  // that version, unmarked), its reservation open in the ledger and still held by the gate, which
  // is told only after the ledger settles.
  await w.db.sql`delete from ledger where conversion_id = ${id} and kind in ('release', 'charge')`;
  await w.db.sql`update conversions set settled_at = null, completed_at = completed_at - interval '1 minute' where id = ${id}`;
  await gate.adjust(w.accountId, Number(charge!.n));
  t.ok(await gate.adopt(w.accountId, id, Number(reserve!.n)), 'the gate holds the reservation again');
  t.equal(await ledger.balance(w.accountId), balance + Number(charge!.n) - Number(reserve!.n), 'and its balance is the one before the settle');
  const ctx = { sql: w.db.sql, billing: { ledger }, audit: { watch: () => undefined } } as unknown as ConversionContext;
  t.equal(await settleLost(ctx), 1, 'the sweep finds it');
  const kinds = (await w.db.sql`select kind from ledger where conversion_id = ${id} order by id`).map((r) => r.kind as string);
  t.same(kinds, ['reserve', 'release', 'charge'], 'the sweep settled it: released and charged once');
  const [marked] = await w.db.sql`select settled_at from conversions where id = ${id}`;
  t.ok(marked!.settled_at instanceof Date, 'and marked it settled: the next pass does not look at it again');
  t.equal(await settleLost(ctx), 0, 'the next pass finds nothing');
  const [again] = await w.db.sql`select -amount as n from ledger where conversion_id = ${id} and kind = 'charge'`;
  t.equal(Number(again!.n), Number(charge!.n), 'charged what its files cost');
  t.equal(await gate.running(w.accountId), 0, 'the gate released the reservation');
  t.equal(await ledger.balance(w.accountId), balance, 'the gate charged it once');
});

t.test('a request waiting on a query the database never answers gets a 503 at the query deadline, not a hang', async (t) => {
  const { relay, held, w } = await heldWorld(t);
  held.hold();
  const answer = w.req('POST', '/v1/convert/html', { json: { html: '<p>Waiting on a stalled database.</p>' }, headers: { prefer: 'wait=1' } });
  for (let i = 0; i < 100 && held.waitingTasks === 0; i++) await sleep(20);
  t.equal(held.waitingTasks, 1, 'the job runs, the request waits in its window');
  // Every connection of the server's pool open (a query on a new one would fail at the connect
  // timeout instead), then nothing gets through them: their queries stay unanswered.
  const appSql = w.app.deps.db.sql;
  await Promise.all(Array.from({ length: 4 }, () => appSql`select pg_sleep(0.1)`));
  relay.freeze();
  // With the relay frozen the query never returns (it is thawed only after the answer): any
  // answer at all is the query deadline's work, and a hang ends at the file's timeout.
  const res = await answer;
  t.equal(res.status, 503);
  t.match(await res.json(), { error: 'service_unavailable', retryable: true });
  relay.thaw();
  held.release();
});

t.test('a render whose group commit the database never answers gets a 503 at the query deadline, and the renders after it commit', async (t) => {
  const { relay, w } = await heldWorld(t);
  // One render first, so that what the request reads before its commit (its key) is cached.
  const first = await w.req('POST', '/v1/convert/markdown/html', { json: { markdown: '# First' } });
  t.equal(first.status, 200);
  // Every connection of the server's pool open, then frozen: the commit's statements are sent
  // and never answered, and the connection stays open (no error ever comes back).
  const appSql = w.app.deps.db.sql;
  await Promise.all(Array.from({ length: 4 }, () => appSql`select pg_sleep(0.1)`));
  relay.freeze();
  const stalled = await w.req('POST', '/v1/convert/markdown/html', { json: { markdown: '# Stalled\n\nIts commit is never answered.' } });
  t.equal(stalled.status, 503, 'the render waiting on its group commit answers at the deadline');
  t.match(await stalled.json(), { error: 'service_unavailable', retryable: true });
  relay.thaw();
  // The group commit went on: the next render is stored and answered.
  const after = await w.req('POST', '/v1/convert/markdown/html', { json: { markdown: '# After\n\nStored.' } });
  t.equal(after.status, 200, 'a render after the thaw commits');
  const { id } = await after.json() as { id: string };
  const [row] = await w.db.sql`select status from conversions where id = ${id}`;
  t.equal(row?.status, 'completed');
});

t.test('MEND_INTERVAL_S is checked at start', async (t) => {
  const { loadConfig } = await import('../../src/config.js');
  t.equal(loadConfig({}).mendIntervalS, 10, 'default 10 s');
  t.equal(loadConfig({ MEND_INTERVAL_S: '0.5' }).mendIntervalS, 0.5);
  t.throws(() => loadConfig({ MEND_INTERVAL_S: '0' }), /MEND_INTERVAL_S must be a positive number/);
  t.throws(() => loadConfig({ MEND_INTERVAL_S: 'often' }), /MEND_INTERVAL_S must be a positive number/);
});
