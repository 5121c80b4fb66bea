// The chaos run (bench/chaos.ts is its command line): two docpipe processes on one Postgres
// schema of their own, one private Redis and one shared DATA_DIR (as docker-compose runs them),
// under a mixed load, while instances are killed (SIGKILL) and started again and Redis is killed
// and started again empty, at random. Then the faults stop, the survivors finish (leases run
// out, the settle sweep and the gate audit run), and the invariants are checked
// (invariants.ts). Everything it made is removed at the end unless asked to keep it.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDb } from '../../src/store/db.js';
import { createAccount, createKey, SCOPES } from '../../src/store/accounts.js';
import { grantCredits } from '../../src/billing/ledger.js';
import { RedisGate } from '../../src/billing/redis-gate.js';
import { buildReport } from '../../test/fixtures/build/docx.js';
import { buildReportPdf, buildScanPdf } from '../../test/fixtures/build/pdf.js';
import { DATABASE_URL, freePort, spawnDocpipe, type Spawned } from '../docpipe.js';
import { startPrivateRedis } from './redis.js';
import { acceptedIds, awaitTerminal, rng, startLoad, type Doc, type Sent } from './load.js';
import { checkInvariants, table, type Check } from './invariants.js';

export interface ChaosOptions {
  minutes: number;
  seed: number;
  /** Load workers (requests in flight). */
  workers?: number;
  /** Seconds between two faults, drawn uniformly from this range. */
  faultEvery?: [number, number];
  /** Keep the schema, DATA_DIR and logs (they are kept anyway when an invariant is broken). */
  keep?: boolean;
  log?: (line: string) => void;
}

export interface ChaosResult {
  checks: Check[];
  counts: Array<[string, number]>;
  violations: number;
  /** The printed report: the invariants, then the counts. */
  report: string;
  /** Where the data and the servers' logs are, when kept. */
  kept?: string;
}

const ACCOUNTS = 3;
const CREDITS = 1_000_000;
/** Short leases and audit grace so that the end of the run does not wait long for survivors. */
const LEASE_S = 5;
const AUDIT_GRACE_S = 5;
/** The settle sweep, the gate audit and the pending-blob sweep run every 10 s in each process;
 *  the last resolves blobs left pending for over 30 s (PENDING_GRACE_MS with these leases). */
const SWEEP_S = 10;
const PENDING_GRACE_S = 30;


const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function runChaos(opts: ChaosOptions): Promise<ChaosResult> {
  const log = opts.log ?? ((line: string) => console.error(line));
  const rand = rng(opts.seed);
  const between = (lo: number, hi: number): number => lo + rand() * (hi - lo);
  const [faultLo, faultHi] = opts.faultEvery ?? [4, 12];
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-chaos-'));
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'docpipe-chaos-docs-'));
  const logDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-chaos-logs-'));
  const schema = `chaos_${randomBytes(5).toString('hex')}`;
  const prefix = 'chaos:';
  const redis = await startPrivateRedis(await freePort());
  const db = await openDb({ databaseUrl: DATABASE_URL, dataDir, schema, max: 4 });
  log(`chaos: seed ${opts.seed}, schema ${schema}, redis ${redis.url}, DATA_DIR ${dataDir}, logs ${logDir}`);

  const accounts: Array<{ accountId: string; key: string }> = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const a = await createAccount(db.sql, { name: `chaos ${i + 1}`, plan: 'max', subscription: 'active' });
    const { key } = await createKey(db.sql, a.id, SCOPES);
    await grantCredits(db.sql, a.id, CREDITS, 'chaos', { url: redis.url, prefix });
    accounts.push({ accountId: a.id, key });
  }
  const docx = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
  const docs: Doc[] = [
    { endpoint: 'word', name: 'report.docx', type: docx, data: readFileSync(await buildReport(scratch)), weight: 4 },
    { endpoint: 'pdf', name: 'report.pdf', type: 'application/pdf', data: readFileSync(await buildReportPdf(scratch)), weight: 4 },
    // OCR of a scanned page: a document that takes a while (seconds on one pool thread), so
    // rarer than the others, or its backlog would hold every account at its concurrency limit.
    { endpoint: 'pdf', name: 'scan.pdf', type: 'application/pdf', data: readFileSync(await buildScanPdf(scratch)), fields: { ocr: 'true' }, weight: 1 },
  ];

  const env = {
    DATABASE_URL, DATABASE_SCHEMA: schema, REDIS_URL: redis.url, REDIS_PREFIX: prefix, DATA_DIR: dataDir,
    POOL_THREADS: '1', JOB_LEASE_S: String(LEASE_S), GATE_AUDIT_GRACE_S: String(AUDIT_GRACE_S), SHUTDOWN_GRACE_S: '2',
    PLAN_OVERRIDES: JSON.stringify({ max: { concurrency: 64, requestsPerMinute: 1_000_000, filesPerMonth: 1_000_000_000 } }),
  };
  const slots: Array<Spawned | undefined> = [undefined, undefined];
  const launch = async (i: number): Promise<void> => {
    slots[i] = await spawnDocpipe(env, { logDir, timeoutMs: 60_000 });
  };
  await Promise.all([launch(0), launch(1)]);
  const origins = (): string[] => slots.flatMap((s) => (s ? [s.origin] : []));
  log(`chaos: instances up at ${origins().join(', ')}`);

  const load = startLoad({
    origins, accounts, docs, workers: opts.workers ?? 6, timeoutMs: 60_000, waitS: 15, seed: opts.seed + 1,
    mix: { markdown: 3, html: 3, text: 1, document: 2, async: 1, idempotent: 2, delete: 1 },
  });

  let kills = 0;
  let redisRestarts = 0;
  const restarts: Array<Promise<void>> = [];
  const deadline = Date.now() + opts.minutes * 60_000;
  while (Date.now() < deadline) {
    await sleep(Math.min(between(faultLo, faultHi) * 1000, Math.max(0, deadline - Date.now())));
    if (Date.now() >= deadline) break;
    const up = slots.flatMap((s, i) => (s ? [i] : []));
    if (rand() < 0.65 && up.length > 0) {
      const i = up[Math.floor(rand() * up.length)]!;
      const victim = slots[i]!;
      slots[i] = undefined;
      victim.kill('SIGKILL');
      kills++;
      const downFor = between(1, 4);
      log(`chaos: SIGKILL instance ${i + 1} (pid ${victim.pid}); back in ${downFor.toFixed(1)} s`);
      restarts.push(victim.exited.then(() => sleep(downFor * 1000)).then(() => launch(i)));
    } else {
      redisRestarts++;
      const downFor = between(0.3, 2);
      log(`chaos: Redis killed; started again empty in ${downFor.toFixed(1)} s`);
      await redis.kill();
      await sleep(downFor * 1000);
      await redis.start();
    }
  }
  log('chaos: faults stop; letting the survivors finish');
  await Promise.all(restarts);
  await load.stop();
  const sent = load.sent;

  const { live, deleteSent } = acceptedIds(sent);
  const origin = (): string | undefined => origins()[0];
  const unfinished = await awaitTerminal(origin, accounts, live, deleteSent, 180_000);
  if (unfinished.length) log(`chaos: ${unfinished.length} accepted conversions not terminal after 180 s, e.g. ${JSON.stringify(unfinished.slice(0, 3))}`);

  // Settles and gate mends that the faults left to the sweeps: give them a few periods.
  const gate = new RedisGate({ redis: redis.url, prefix });
  const view = { balance: (id: string) => gate.balance(id), running: (id: string) => gate.running(id) };
  const check = (): Promise<Check[]> => checkInvariants({
    sql: db.sql, accountIds: accounts.map((a) => a.accountId), sent, gate: view, dataDirs: [dataDir],
  });
  let checks = await check();
  const settleUntil = Date.now() + (PENDING_GRACE_S + 3 * SWEEP_S + AUDIT_GRACE_S + LEASE_S) * 1000;
  while (checks.some((c) => c.violations > 0) && Date.now() < settleUntil) {
    await sleep(2_000);
    checks = await check();
  }
  checks.push(answerCheck('no 500 answer', sent, (r) => r.status >= 500 && r.status !== 503));
  checks.push(answerCheck('no request hung (60 s)', sent, (r) => r.status === -1));
  await gate.close();

  const violations = checks.reduce((a, c) => a + c.violations, 0);
  for (const s of slots) await s?.stop();
  const mends = fromLogs(logDir);
  const counts: Array<[string, number]> = [
    ['minutes', opts.minutes],
    ['requests', sent.length],
    ['accepted (200/202)', new Set(sent.filter((r) => r.method === 'POST' && (r.status === 200 || r.status === 202)).map((r) => r.id)).size],
    ['refused 503 (retryable)', count(sent, (r) => r.status === 503)],
    ['refused 429 concurrency_limited', count(sent, (r) => r.error === 'concurrency_limited')],
    ['refused 429 rate_limited', count(sent, (r) => r.error === 'rate_limited')],
    ['connection failed (instance killed)', count(sent, (r) => r.status === 0)],
    ['deletes answered 200', count(sent, (r) => r.method === 'DELETE' && r.status === 200)],
    ['idempotent replays', count(sent, (r) => r.replayed === true)],
    ['faults: instance kills (SIGKILL)', kills],
    ['faults: Redis restarts (empty)', redisRestarts],
    ['settles redone by the settle sweep', mends.settles],
    ['gate reservations mended by the audit', mends.gate],
    ['blobs left pending, resolved by their rows', mends.pending],
    ['errors logged by the servers', mends.errors],
    ['temp files left by killed requests', tempFiles(dataDir)],
    ['invariant violations', violations],
  ];
  const report = `${table(checks)}\n\n${countsTable(counts)}`;
  const problems = checks.filter((c) => c.violations > 0);
  for (const c of problems) log(`chaos: ${c.name}: ${c.examples.join('; ')}`);

  await redis.stop();
  const keep = opts.keep || violations > 0;
  if (!keep) await db.sql.unsafe(`drop schema if exists "${schema}" cascade`).catch(() => {});
  await db.close();
  rmSync(scratch, { recursive: true, force: true });
  if (!keep) {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(logDir, { recursive: true, force: true });
  }
  return { checks, counts, violations, report, kept: keep ? `schema ${schema}, DATA_DIR ${dataDir}, logs ${logDir}` : undefined };
}

function count(sent: Sent[], pred: (r: Sent) => boolean): number {
  return sent.reduce((a, r) => a + (pred(r) ? 1 : 0), 0);
}

function answerCheck(name: string, sent: Sent[], bad: (r: Sent) => boolean): Check {
  const hits = sent.filter(bad);
  return { name, checked: sent.length, violations: hits.length, examples: hits.slice(0, 5).map((r) => `${r.method} ${r.op} → ${r.status} ${r.error ?? ''}`) };
}

/** What the servers' logs say the sweeps mended (warn lines of ConversionService.sweep), and how
 *  many errors they logged (settles and sweeps failing while Redis was away, …). */
function fromLogs(logDir: string): { settles: number; gate: number; pending: number; errors: number } {
  const out = { settles: 0, gate: 0, pending: 0, errors: 0 };
  for (const f of readdirSync(logDir)) {
    for (const line of readFileSync(path.join(logDir, f), 'utf8').split('\n')) {
      if (!line.startsWith('{')) continue;
      let rec: { level?: number; msg?: string; mended?: Record<string, number> };
      try { rec = JSON.parse(line); } catch { continue; }
      if (rec.level !== undefined && rec.level >= 50) out.errors++;
      if (!rec.mended) continue;
      if (rec.msg?.startsWith('settled')) out.settles += rec.mended.conversions ?? 0;
      else if (rec.msg?.startsWith('blobs')) out.pending += (rec.mended.placed ?? 0) + (rec.mended.removed ?? 0);
      else out.gate += (rec.mended.settled ?? 0) + (rec.mended.released ?? 0) + (rec.mended.adopted ?? 0);
    }
  }
  return out;
}

function tempFiles(dataDir: string): number {
  try {
    return readdirSync(path.join(dataDir, 'tmp')).length;
  } catch {
    return 0;
  }
}

function countsTable(rows: Array<[string, number]>): string {
  const w = Math.max(...rows.map(([k]) => k.length));
  const v = Math.max(...rows.map(([, n]) => String(n).length));
  return rows.map(([k, n]) => `${k.padEnd(w)}  ${String(n).padStart(v)}`).join('\n');
}
