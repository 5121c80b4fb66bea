// What must hold once faults stop and the survivors have finished their work, checked on the
// database, the billing gate's copy and the disk (the chaos run prints these; the outage tests
// assert them):
// - ledger: per account, the sum of the ledger is what was granted minus what was charged
//   (every reservation ended in a release);
// - gate: the gate's copy of each balance, when it holds one, equals the ledger's sum and holds
//   no reservation (no credit created or lost by a restart);
// - terminal: every conversion a 200/202 named is terminal, or was deleted by the client; and so
//   is every other conversion in the database (those whose answer was lost);
// - charged once: every finished paid conversion has exactly one release, at most one charge,
//   and that charge is what its completed sources cost;
// - idempotency: the 2xx answers to one Idempotency-Key name one conversion;
// - blobs: every blob file on disk has a row, every row's blob is on disk, and nothing is left
//   in pending/.
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Sql } from '../../src/store/db.js';
import { TERMINAL, type Sent } from './load.js';

export interface Check {
  name: string;
  /** How many things the check looked at. */
  checked: number;
  violations: number;
  /** A few of the violations, to start looking from. */
  examples: string[];
}

export interface GateView {
  /** The gate's available balance for the account, or null when it does not hold it. */
  balance(accountId: string): Promise<number | null>;
  /** Reservations the gate holds for the account. */
  running(accountId: string): Promise<number>;
}

export interface InvariantInput {
  sql: Sql;
  accountIds: string[];
  sent: Sent[];
  gate?: GateView;
  /** DATA_DIRs whose blobs/ must match the rows. */
  dataDirs?: string[];
}

const EXAMPLES = 5;

function check(name: string, checked: number, bad: string[]): Check {
  return { name, checked, violations: bad.length, examples: bad.slice(0, EXAMPLES) };
}

export async function checkInvariants(input: InvariantInput): Promise<Check[]> {
  const out: Check[] = [];
  out.push(await ledgerBalances(input.sql, input.accountIds));
  if (input.gate) out.push(await gateCopies(input.sql, input.accountIds, input.gate));
  out.push(...await terminal(input.sql, input.sent));
  out.push(await chargedOnce(input.sql));
  out.push(idempotency(input.sent));
  if (input.dataDirs) out.push(await blobs(input.sql, input.dataDirs));
  return out;
}

async function ledgerBalances(sql: Sql, accountIds: string[]): Promise<Check> {
  const rows = await sql`
    select a.id,
      coalesce(sum(l.amount), 0)::bigint as sum,
      coalesce(sum(l.amount) filter (where l.kind = 'grant'), 0)::bigint as granted,
      coalesce(-sum(l.amount) filter (where l.kind = 'charge'), 0)::bigint as charged
    from accounts a left join ledger l on l.account_id = a.id
    where a.id in ${sql(accountIds)} group by a.id`;
  const bad = rows
    .filter((r) => Number(r.sum) !== Number(r.granted) - Number(r.charged))
    .map((r) => `${r.id}: ledger sum ${r.sum} ≠ granted ${r.granted} − charged ${r.charged}`);
  return check('ledger sum = granted − charged', rows.length, bad);
}

async function gateCopies(sql: Sql, accountIds: string[], gate: GateView): Promise<Check> {
  const bad: string[] = [];
  for (const id of accountIds) {
    const [r] = await sql`select coalesce(sum(amount), 0)::bigint as sum from ledger where account_id = ${id}`;
    const held = await gate.balance(id);
    const running = await gate.running(id);
    if (held !== null && held !== Number(r!.sum)) bad.push(`${id}: gate balance ${held} ≠ ledger ${r!.sum}`);
    if (running !== 0) bad.push(`${id}: gate still holds ${running} reservations`);
  }
  return check('gate balance = ledger', accountIds.length, bad);
}

async function terminal(sql: Sql, sent: Sent[]): Promise<Check[]> {
  const accepted = new Set<string>();
  const deleteSent = new Set<string>();
  for (const r of sent) {
    if (r.method === 'POST' && (r.status === 200 || r.status === 202) && r.id) accepted.add(r.id);
    if (r.method === 'DELETE' && r.id) deleteSent.add(r.id);
  }
  const rows = await sql`select id, status from conversions`;
  const status = new Map(rows.map((r) => [r.id as string, r.status as string]));
  const bad: string[] = [];
  for (const id of accepted) {
    const s = status.get(id);
    if (s === undefined) { if (!deleteSent.has(id)) bad.push(`${id}: answered 200/202, now missing`); continue; }
    if (!TERMINAL.has(s)) bad.push(`${id}: answered 200/202, still ${s}`);
  }
  const stuck = rows.filter((r) => !TERMINAL.has(r.status as string)).map((r) => `${r.id}: ${r.status}`);
  return [
    check('accepted conversions terminal', accepted.size, bad),
    check('every conversion terminal', rows.length, stuck),
  ];
}

async function chargedOnce(sql: Sql): Promise<Check> {
  const rows = await sql`
    select c.id, c.credits_charged,
      (select count(*) from ledger l where l.conversion_id = c.id and l.kind = 'release')::int as releases,
      (select count(*) from ledger l where l.conversion_id = c.id and l.kind = 'charge')::int as charges,
      (select coalesce(-sum(amount), 0) from ledger l where l.conversion_id = c.id and l.kind = 'charge')::int as charged,
      (select coalesce(-sum(amount), 0) from ledger l where l.conversion_id = c.id and l.kind = 'reserve')::int as reserved
    from conversions c where c.operation = 'parse' and c.completed_at is not null`;
  const bad: string[] = [];
  for (const r of rows) {
    if (r.releases !== 1) bad.push(`${r.id}: ${r.releases} releases`);
    if (r.charges > 1) bad.push(`${r.id}: charged ${r.charges} times`);
    if (r.charged !== Math.min(Number(r.credits_charged), Number(r.reserved))) {
      bad.push(`${r.id}: ledger charge ${r.charged} ≠ completed sources' ${r.credits_charged}`);
    }
  }
  // Conversions deleted after they settled keep their money rows: still at most one charge each.
  const twice = await sql`select conversion_id, count(*)::int as n from ledger where kind = 'charge'
                          group by conversion_id having count(*) > 1`;
  for (const r of twice) bad.push(`${r.conversion_id}: ${r.n} charge rows`);
  return check('charged once, as completed', rows.length, bad);
}

function idempotency(sent: Sent[]): Check {
  const ids = new Map<string, Set<string>>();
  for (const r of sent) {
    if (!r.idempotencyKey || !(r.status === 200 || r.status === 202) || !r.id) continue;
    const set = ids.get(r.idempotencyKey) ?? new Set<string>();
    set.add(r.id);
    ids.set(r.idempotencyKey, set);
  }
  const bad = [...ids].filter(([, s]) => s.size > 1).map(([k, s]) => `${k}: ${[...s].join(', ')}`);
  return check('one conversion per idempotency key', ids.size, bad);
}

function readdirSafe(dir: string): string[] {
  try { return readdirSync(dir); } catch { return []; }
}

/** Every file under each DATA_DIR's blobs/, as blob names (relative to blobs/). */
function blobFiles(dataDir: string): string[] {
  const root = path.join(dataDir, 'blobs');
  const out: string[] = [];
  const walk = (dir: string): void => {
    let names: string[];
    try { names = readdirSync(dir); } catch { return; }
    for (const n of names) {
      const p = path.join(dir, n);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(path.relative(root, p));
    }
  };
  walk(root);
  return out;
}

async function blobs(sql: Sql, dataDirs: string[]): Promise<Check> {
  const rows = await sql`
    select blob from files where blob is not null
    union all select blob from uploads where blob is not null
    union all select blob from upload_parts`;
  const named = new Set(rows.map((r) => r.blob as string));
  const onDisk = new Set(dataDirs.flatMap(blobFiles));
  const bad: string[] = [];
  for (const f of onDisk) if (!named.has(f)) bad.push(`${f}: on disk, no row`);
  for (const b of named) if (!onDisk.has(b)) bad.push(`${b}: row, no file`);
  // Blobs between their file and their row (store/blobs.ts): none once the sweeps have run.
  for (const d of dataDirs) {
    for (const e of readdirSafe(path.join(d, 'pending'))) bad.push(`pending/${e}: never placed nor removed`);
  }
  return check('no orphan blobs', new Set([...onDisk, ...named]).size, bad);
}

/** The checks as a plain-text table. */
export function table(checks: Check[]): string {
  const head = ['invariant', 'checked', 'violations'];
  const rows = checks.map((c) => [c.name, String(c.checked), String(c.violations)]);
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  return [line(head), line(w.map((n) => '-'.repeat(n))), ...rows.map(line)].join('\n');
}
