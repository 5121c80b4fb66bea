// The Postgres credit ledger: the truth behind the billing gate (gate.ts). Every grant,
// reservation, charge and release is one row of `ledger` (migrations/0002_ledger.sql), and the
// sum of an account's rows is its available balance: grants − charges − open reservations.
//
// Contract kept here for every money move: the ledger row is committed first, then the gate is
// told (adjust / settle), as the gate requires. A reservation row is written by the caller inside
// the conversion's insert transaction (recordReservation), after the gate reserved.
// Settlement is exactly-once per conversion: the unique (conversion_id, kind) index lets one
// release row exist, so a retried job, a DELETE and the finishing run can all call settle.
import type { Sql } from '../store/db.js';
import { RedisGate } from './redis-gate.js';
import type { BalanceRead, Gate, LedgerSnapshot } from './gate.js';

/** The ledger's amount column is a Postgres integer. */
export const MAX_GRANT = 2_147_483_647;

export interface Settlement {
  reserved: number;
  charged: number;
  /** False when an earlier settle had already written the rows (this one only re-told the gate). */
  first: boolean;
}

/** What the ledger holds of one conversion: its reservation (null when none was written yet),
 *  whether it was released, and what it was charged. */
export interface LedgerEntry {
  reserved: number | null;
  released: boolean;
  charged: number;
}

/** A ledger snapshot, with the rows of the conversions asked `about` (when asked) read in the
 *  same moment. */
export interface LedgerView extends LedgerSnapshot {
  about?: Map<string, LedgerEntry>;
}

/**
 * Balance and open reservations, read in one statement so both come from one snapshot; with the
 * ledger rows of the conversions `about` (the gate audit's question), from that snapshot too.
 * Read from the account's checkpoint and the rows at or above its horizon (migrations 0012 and
 * 0013), so the work is the rows since and the reservations the checkpoint left open, not the
 * account's history. The open reservations are the conversions grouped (the checkpoint's half-done
 * entries and the rows since), not each reservation looked up among the rows again (an anti-join
 * of the rows with themselves, which Postgres ran as a nested loop when the table had no
 * statistics yet: 10.7 s for an account of 30,000 rows, against 15–18 ms grouped).
 */
export async function readLedger(sql: Sql, accountId: string, about: readonly string[] = []): Promise<LedgerView> {
  const [row] = await sql`
    with ${sinceCheckpoint(sql, accountId)},
    halves as (${pendingRows(sql)} union all select conversion_id, kind, amount from l where kind in ('reserve', 'release'))
    select (coalesce((select balance from cp), 0) + coalesce((select sum(amount) from l), 0))::text as balance,
      coalesce((select json_agg(json_build_object('c', o.conversion_id, 'n', o.n))
                from (select conversion_id, -min(amount) as n from halves
                      group by conversion_id having bool_and(kind = 'reserve')) o),
               '[]'::json) as open,
      coalesce((select json_agg(e) from (${entryRows(sql, accountId, about)}) e), '[]'::json) as about`;
  const open = row!.open as Array<{ c: string; n: number }>;
  const snapshot = { balance: Number(row!.balance), reservations: open.map((r) => ({ conversionId: r.c, credits: r.n })) };
  return about.length === 0 ? snapshot : { ...snapshot, about: entriesOf(row!.about as EntryRow[]) };
}

/**
 * The account's balance, as the ledger stands in the caller's snapshot (inside a transaction, its
 * own rows included): the account's checkpoint plus the rows written at or above its horizon
 * (migration 0012), so the work is the rows since the last checkpoint, not the account's history.
 * `since`: how many rows that was.
 */
export async function ledgerBalance(sql: Sql, accountId: string): Promise<{ balance: number; since: number }> {
  const [row] = await sql`
    with ${sinceCheckpoint(sql, accountId)}
    select (coalesce((select balance from cp), 0) + coalesce(sum(amount), 0))::text as balance, count(*)::int as since from l`;
  return { balance: Number(row!.balance), since: row!.since as number };
}

/**
 * The opening of a read from an account's checkpoint (migrations 0012, 0013): `cp`, the
 * checkpoint (none for an account that has had none), and `l`, the account's rows at or above its
 * horizon (all of them without a checkpoint; rows from before 0012 carry transaction 0).
 */
function sinceCheckpoint(sql: Sql, accountId: string) {
  return sql`cp as (select horizon, balance, pending from ledger_checkpoints where account_id = ${accountId}),
    l as (select conversion_id, kind, amount, xid from ledger
          where account_id = ${accountId} and xid >= coalesce((select horizon from cp), '0'::xid8))`;
}

/** The checkpoint's half-done conversions (`cp.pending`) as the ledger rows they stand for. */
function pendingRows(sql: Sql) {
  return sql`select p->>'c' as conversion_id, p->>'k' as kind, (p->>'n')::int as amount from cp, jsonb_array_elements(cp.pending) p`;
}

/** Rows since an account's checkpoint at which checkpointBalance takes a new one. */
export const CHECKPOINT_ROWS = 256;

/**
 * Moves the account's checkpoint up when at least `minRows` rows lie between it and the oldest
 * transaction still running, by adding those rows to it; true when it moved. One statement, so
 * the horizon, the sum and the half-done conversions (a reservation without its release below
 * the horizon, or the other way round: readLedger's open reservations start from them) come from
 * one snapshot: every transaction below the horizon had ended when it was taken, so no row can
 * join them later. Two processes taking one at once each compute an exact checkpoint; the one
 * with the higher horizon stays.
 */
export async function checkpointBalance(sql: Sql, accountId: string, minRows = CHECKPOINT_ROWS): Promise<boolean> {
  const moved = await sql`
    with ${sinceCheckpoint(sql, accountId)},
    h as (select pg_snapshot_xmin(pg_current_snapshot()) as x),
    r as (select conversion_id, kind, amount from l where xid < (select x from h)),
    d as (select count(*) as n, coalesce(sum(amount), 0) as s from r),
    halves as (${pendingRows(sql)} union all select conversion_id, kind, amount from r where kind in ('reserve', 'release')),
    half as (select conversion_id as c, min(kind) as k, min(amount) as n from halves group by conversion_id having count(*) = 1)
    insert into ledger_checkpoints (account_id, horizon, balance, pending)
    select ${accountId}, (select x from h), coalesce((select balance from cp), 0) + d.s,
      coalesce((select jsonb_agg(jsonb_build_object('c', c, 'k', k, 'n', n)) from half), '[]'::jsonb)
    from d where d.n >= ${minRows}
    on conflict (account_id) do update set horizon = excluded.horizon, balance = excluded.balance, pending = excluded.pending, taken_at = now()
      where ledger_checkpoints.horizon < excluded.horizon
    returning 1`;
  return moved.length > 0;
}

/** The ledger's entries for some of an account's conversions (the gate audit's look at what the
 *  gate holds). */
export async function ledgerEntries(sql: Sql, accountId: string, conversionIds: readonly string[]): Promise<Map<string, LedgerEntry>> {
  return conversionIds.length === 0 ? new Map() : entriesOf(await entryRows(sql, accountId, conversionIds) as unknown as EntryRow[]);
}

interface EntryRow { c: string; k: string; n: number }

/** The rows behind ledgerEntries, also read inside readLedger's one statement. */
function entryRows(sql: Sql, accountId: string, conversionIds: readonly string[]) {
  return sql`select conversion_id as c, kind as k, -amount as n from ledger
    where conversion_id = any(${sql.array([...conversionIds])}::text[]) and account_id = ${accountId}`;
}

function entriesOf(rows: readonly EntryRow[]): Map<string, LedgerEntry> {
  const entries = new Map<string, LedgerEntry>();
  for (const r of rows) {
    const e = entries.get(r.c) ?? { reserved: null, released: false, charged: 0 };
    if (r.k === 'reserve') e.reserved = Number(r.n);
    else if (r.k === 'release') e.released = true;
    else if (r.k === 'charge') e.charged = Number(r.n);
    entries.set(r.c, e);
  }
  return entries;
}

/** Writes the reserve row of a conversion; call it inside the transaction that inserts it. */
export async function recordReservation(tx: Sql, accountId: string, conversionId: string, credits: number): Promise<void> {
  await tx`insert into ledger (account_id, conversion_id, kind, amount)
           values (${accountId}, ${conversionId}, 'reserve', ${-credits})`;
}

function checkGrant(amount: number): void {
  if (!Number.isSafeInteger(amount) || amount < 1 || amount > MAX_GRANT) {
    throw new TypeError(`a grant must be an integer from 1 to ${MAX_GRANT}, got ${amount}`);
  }
}

async function writeGrant(sql: Sql, accountId: string, amount: number, note: string): Promise<void> {
  checkGrant(amount);
  await sql`insert into ledger (account_id, kind, amount, note) values (${accountId}, 'grant', ${amount}, ${note})`;
}

/**
 * For the admin CLI: grants credits to an account from outside the server. The ledger row is
 * what counts; a server whose gate does not hold the account reads it at its next rebuild. With a
 * Redis URL, an account the shared gate holds is adjusted at once. A server on the in-process
 * gate (embedded mode, no Redis) only sees the grant after a restart.
 */
export async function grantCredits(sql: Sql, accountId: string, amount: number, note: string,
  redis?: { url: string; prefix?: string }): Promise<{ adjusted: boolean }> {
  await writeGrant(sql, accountId, amount, note);
  if (!redis) return { adjusted: false };
  const gate = new RedisGate({ redis: redis.url, prefix: redis.prefix ?? 'dp:' });
  try {
    return { adjusted: (await gate.adjust(accountId, amount)).applied };
  } finally {
    await gate.close();
  }
}

/**
 * The ledger half of a settle, inside the caller's transaction (Ledger.settle, or a delete that
 * must release in the transaction that removes the conversion): charges `charged` (clamped to the
 * reservation) and releases the rest, once per conversion. Undefined when it never reserved.
 */
export async function settleRows(tx: Sql, accountId: string, conversionId: string, charged: number): Promise<Settlement | undefined> {
  const wanted = Math.max(0, Math.trunc(charged));
  // The common case in one statement: the release (the reservation's amount) and the charge (at
  // most that). A concurrent settle of the same conversion waits on the release's unique index,
  // then inserts nothing: told apart below from a conversion that reserved nothing.
  const [first] = await tx`
    with rel as (
      insert into ledger (account_id, conversion_id, kind, amount)
      select account_id, conversion_id, 'release', -amount from ledger
      where conversion_id = ${conversionId} and kind = 'reserve' and account_id = ${accountId}
      on conflict do nothing returning amount),
    ch as (
      insert into ledger (account_id, conversion_id, kind, amount)
      select ${accountId}, ${conversionId}, 'charge', -least(${wanted}::int, amount) from rel
      where least(${wanted}::int, amount) > 0 returning amount),
    marked as (update conversions set settled_at = now() where id = ${conversionId} and exists (select 1 from rel))
    select rel.amount as reserved, coalesce((select -amount from ch), 0) as charged from rel`;
  if (first) return { reserved: Number(first.reserved), charged: Number(first.charged), first: true };
  const [r] = await tx`select -amount as reserved from ledger
                       where conversion_id = ${conversionId} and kind = 'reserve' and account_id = ${accountId}`;
  if (!r) return undefined;
  const reserved = Number(r.reserved);
  // A concurrent settle of the same conversion waits here on the unique index, then skips.
  const won = await tx`insert into ledger (account_id, conversion_id, kind, amount)
                       values (${accountId}, ${conversionId}, 'release', ${reserved})
                       on conflict do nothing returning id`;
  if (won.length === 0) {
    const [c] = await tx`select -amount as charged from ledger where conversion_id = ${conversionId} and kind = 'charge'`;
    return { reserved, charged: c ? Number(c.charged) : 0, first: false };
  }
  await tx`update conversions set settled_at = now() where id = ${conversionId}`;
  const applied = Math.min(Math.max(0, Math.trunc(charged)), reserved);
  if (applied > 0) {
    await tx`insert into ledger (account_id, conversion_id, kind, amount)
             values (${accountId}, ${conversionId}, 'charge', ${-applied})`;
  }
  return { reserved, charged: applied, first: true };
}

/**
 * Reads of one account's ledger, shared: a read starts after the call that asks for it (a gate
 * load needs a snapshot newer than the epoch its caller saw), and the calls that come while one
 * runs share the next. A burst of requests on an account the gate does not hold (after a Redis
 * restart or a forget) then costs its thread two reads at a time, not one per request: each read
 * of the whole account made a convoy of a busy account's requests on the database, slower with
 * every one, so that a load rarely landed between two settles.
 */
class SharedReads {
  private readonly accounts = new Map<string, { tail: Promise<unknown>; next?: Promise<LedgerSnapshot> }>();

  constructor(private readonly sql: Sql) {}

  read(accountId: string): Promise<LedgerSnapshot> {
    let a = this.accounts.get(accountId);
    if (!a) {
      a = { tail: Promise.resolve() };
      this.accounts.set(accountId, a);
    }
    if (a.next) return a.next;
    const account = a;
    const next = account.tail.then(() => {
      account.next = undefined; // running: later calls wait for the one after it
      return readLedger(this.sql, accountId);
    });
    account.next = next;
    const tail: Promise<unknown> = next.then(() => {}, () => {}).then(() => {
      if (account.tail === tail) this.accounts.delete(accountId); // none asked since: forget the account
    });
    account.tail = tail;
    return next;
  }
}

/** The ledger and the running server's gate, kept in step. */
export class Ledger {
  private readonly reads: SharedReads;

  constructor(readonly sql: Sql, readonly gate: Gate) {
    this.reads = new SharedReads(sql);
  }

  /** For reserveWithRebuild: a snapshot read after the call (shared with the calls beside it). */
  readonly readLedger = (accountId: string): Promise<LedgerSnapshot> => this.reads.read(accountId);

  async grant(accountId: string, amount: number, note: string): Promise<void> {
    await writeGrant(this.sql, accountId, amount, note);
    await this.gate.adjust(accountId, amount);
  }

  /** The available balance: the gate's copy, or the ledger's sum when the gate does not hold it;
   *  then the gate is loaded with it, so that the next read (every answer shows the balance) is
   *  one gate call. A load that money moved under is refused as stale and simply not made.
   *  `read`: what the gate answered already in this request (the rate limit reads it). */
  async balance(accountId: string, read?: BalanceRead): Promise<number> {
    const held = read ?? await this.gate.readBalance(accountId);
    if (held.kind === 'loaded') return held.balance;
    const snapshot = await this.readLedger(accountId);
    await this.gate.load(accountId, snapshot, held.epoch);
    return snapshot.balance;
  }

  /**
   * Ends a conversion's reservation: charges `charged` (clamped to the reservation), releases the
   * rest. Undefined when the conversion never reserved (render kinds skip the gate). Safe to call
   * any number of times and concurrently: only the first writes rows; every call re-tells the
   * gate what the ledger says, so a settle interrupted between the two steps heals on the next.
   */
  async settle(accountId: string, conversionId: string, charged: number): Promise<Settlement | undefined> {
    const s = await this.sql.begin((tx) => settleRows(tx as unknown as Sql, accountId, conversionId, charged));
    if (!s) return undefined;
    await this.gate.settle(accountId, conversionId, s.charged);
    return s;
  }

  /** Tells the gate a settlement whose rows settleRows wrote in the caller's committed
   *  transaction; the available balance after it, when the gate held the reservation. */
  async tell(accountId: string, conversionId: string, s: Settlement): Promise<number | undefined> {
    const r = await this.gate.settle(accountId, conversionId, s.charged);
    return r.settled ? r.balance : undefined;
  }

  release(accountId: string, conversionId: string): Promise<Settlement | undefined> {
    return this.settle(accountId, conversionId, 0);
  }
}
