// Group commit: the submits that arrive while a commit is in flight wait together and go in the
// next one. Finished Markdown renders (done in the request) and paid submits (queued, with their
// jobs) alike: one transaction inserts all their conversions and files, claims their
// Idempotency-Keys, writes their reservations' ledger rows and their jobs, counts the month once
// per account and queues the webhook events of the finished ones. Each alone would be a
// transaction of its own that also updates its account's monthly counter row, and that row lock
// makes every submit of an account wait for the commit before it: one commit at a time.
//
// A batch is first sent whole, in one round trip (`commitAtOnce`): BEGIN, one statement that locks
// the batch's accounts and checks that none is gone (conversions have no foreign key on their
// account: one lookup an account instead of one a conversion, migration 0016), every write, one
// statement that adds the batch's files to its accounts' counters and checks that every account
// is still within its allowance and that no finished conversion has a webhook subscriber, one
// that claims the Idempotency-Keys and checks that each was won, and COMMIT. A check that fails
// raises (group_commit_check, migration 0008): the statements after it fail, the COMMIT rolls
// the transaction back with the writes, and the batch goes the careful way (`commitCarefully`),
// where each decision is read before the writes: BEGIN; the accounts locked, the counter rows
// made and locked (with the webhook subscribers, pipelined); the keys claimed; every write
// pipelined, with the webhook events; COMMIT. Sent at once, and with the writes before the
// counters, an account's counter row is locked only from its statement to the commit, not while
// Postgres inserts the batch's rows nor for round trips to this process: a batch of another
// acceptor thread, or another process, for the same account waits that much less (under
// scenario A's load, with the counters first, 29–33 % of the samples of a backend not idle found
// it waiting for that lock; with the writes first, 2–5 %). Statements are prepared (db.ts keeps
// the client's default).
//
// What each member is promised is what its own transaction promised:
// - the monthly allowance stays exact: the counter rows of the batch's accounts are locked (in
//   account order, so two processes' batches never deadlock), each conversion is admitted in
//   arrival order while it fits, and the ones that do not are refused with
//   upload_limit_exceeded without touching the others;
// - a member whose account was deleted since its request was authenticated is refused alone,
//   with unauthorized (the foreign key it had before migration 0016 failed its whole batch);
// - an Idempotency-Key already claimed (by a committed conversion, or by an earlier member of the
//   batch) refuses that member alone with KeyTaken: the admission answers it as a replay;
// - a batch that fails as a whole is retried one conversion per transaction, so one bad row
//   cannot fail the requests that happened to share its commit; a batch that failed because the
//   database is away fails as a whole, at once (each member then handles a commit that may have
//   happened, as admit.ts does for its reservation).
import { isDependencyDown } from '../errors.js';
import { insertClaims, monthlyLimit, THIS_MONTH, type IdempotencyClaimRow } from '../billing/admission.js';
import { answered, atOnce, type Sql } from '../store/db.js';
import { accountGone, insertConversions, insertFiles, isTerminal, lockAccounts, type ConversionRow, type FileRow, type NewFile } from '../store/conversions.js';
import { enqueueConversionEvent, eventTypeOf } from '../webhooks/outbox.js';
import { insertJobs, type NewJob } from './queue.js';
import type { CommitTurn } from './commit-turn.js';

/** Thrown (or a member refused with it) when another request holds the Idempotency-Key. */
export class KeyTaken extends Error {}

/** A conversion as it will be stored and answered: finished (a render done in the request) or
 *  queued with its jobs. */
export interface GroupedConversion {
  row: ConversionRow;
  files: NewFile[];
  /** Source files counted against the month, and the plan's allowance. */
  monthlyFiles: number;
  monthlyLimit: number;
  /** The Idempotency-Key claimed in the same transaction. */
  claim?: { endpoint: string; key: string; fingerprint: string };
  /** Credits the gate reserved for it: its reserve row in the ledger. */
  reserved?: number;
  /** One durable job per source to convert, committed with the conversion (claimed in its
   *  insert by the runner that starts it, or queued). */
  jobs?: NewJob[];
}

/** The name the renders' callers knew it by. */
export type FinishedConversion = GroupedConversion;

interface Waiting {
  item: GroupedConversion;
  resolve(): void;
  reject(err: unknown): void;
}

/** Conversions per transaction: far under Postgres's 65,535 parameters with their files. */
export const MAX_BATCH = 200;

export class GroupCommit {
  private queue: Waiting[] = [];
  private flushing = false;
  /**
   * Transactions committed and conversions in them (for metrics and tests); the time batches
   * spent from being taken to being settled (their transactions, retries included), and the
   * batches that found the process's turn taken, with the time they waited for it. Side by side with the wall time they say how much of it
   * the process had a commit in flight (bench:cpu prints it): under scenario A's load on
   * 2 cores, transactions of about 4.5 ms an acceptor thread, each turn reaching the next thread
   * about 1 ms after the last one ended.
   */
  readonly stats = { batches: 0, conversions: 0, committingMs: 0, turnWaits: 0, turnWaitMs: 0 };

  /** `turn`: the process's one commit at a time, shared with its other acceptor threads. */
  constructor(private sql: Sql, private turn?: CommitTurn) {}

  /** Conversions waiting for the next transaction (the one in flight not counted). */
  get waiting(): number {
    return this.queue.length;
  }

  /** Stores the conversion; resolves once its transaction committed. */
  add(item: GroupedConversion): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        // The batch is taken once the turn is ours: it holds what arrived while we waited.
        if (this.turn) {
          const asked = performance.now();
          if (await this.turn.take()) {
            this.stats.turnWaits++;
            this.stats.turnWaitMs += performance.now() - asked;
          }
        }
        const taken = performance.now();
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          // Under the query deadline: a statement left unanswered (a connection cut or stalled
          // under it) fails the batch with a 503 instead of holding this thread's every later
          // commit, and the turn, for good.
          this.settle(batch, await answered(this.commit(batch.map((w) => w.item))));
        } catch (err) {
          // Without a database, one transaction per conversion would fail the same way, one
          // after another: every request of the batch would wait for all the ones before it.
          if (batch.length === 1 || isDependencyDown(err)) {
            for (const w of batch) w.reject(err);
            continue;
          }
          for (const w of batch) {
            try {
              this.settle([w], await this.commit([w.item]));
            } catch (one) {
              w.reject(one);
            }
          }
        } finally {
          this.stats.committingMs += performance.now() - taken;
          this.turn?.release();
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private settle(batch: Waiting[], refused: Map<GroupedConversion, Error>): void {
    for (const w of batch) {
      const err = refused.get(w.item);
      if (err) w.reject(err);
      else w.resolve();
    }
  }

  /** One transaction for the batch; returns the members refused (allowance, key taken). */
  private async commit(items: GroupedConversion[]): Promise<Map<GroupedConversion, Error>> {
    if (!hasKeyTwice(items) && await this.commitAtOnce(items)) {
      this.stats.batches++;
      this.stats.conversions += items.length;
      return new Map();
    }
    return this.commitCarefully(items);
  }

  /**
   * The batch in one round trip, every member admitted; false (and nothing written) when a check
   * failed: some account would pass its allowance, a key is held, or a finished conversion's
   * account has a webhook subscriber (its event is built from the stored rows).
   */
  private async commitAtOnce(items: GroupedConversion[]): Promise<boolean> {
    try {
      // The accounts' key share, then the writes: they lock nothing another transaction waits
      // for (new rows), and the counter rows, which every batch of the account needs, stay
      // locked only from their statement to the commit.
      await atOnce(this.sql, (t) => [
        checkedAccounts(t, items).execute(),
        ...writes(t, items).map((q) => q.execute()),
        checkedCounters(t, items).execute(),
        ...checkedClaims(t, items).map((q) => q.execute()),
      ]);
      return true;
    } catch (err) {
      // After a failed statement Postgres answers the COMMIT by rolling back.
      if ((err as { code?: string }).code === CHECK_FAILED) return false;
      throw err;
    }
  }

  /** The batch with each decision read before the writes (see the head of this file). */
  private async commitCarefully(items: GroupedConversion[]): Promise<Map<GroupedConversion, Error>> {
    const refused = new Map<GroupedConversion, Error>();
    await this.sql.begin(async (tx) => {
      const t = tx as unknown as Sql;
      const [present, counters, listening] = await Promise.all([
        lockAccounts(t, accountsOf(items)), lockCounters(t, items), subscribers(t, items)]);
      for (const c of items) if (!present.has(c.row.account_id)) refused.set(c, accountGone());
      let admitted = admitMonthly(counters, items.filter((c) => !refused.has(c)), refused);
      admitted = await claimKeys(t, admitted, refused);
      if (admitted.length === 0) return;
      const added = filesByAccount(admitted);
      // Issued together: one round trip for all the writes. A query is sent when it is first
      // awaited or executed, so each is executed here in the order the server must run them
      // (the events read the conversions inserted before them).
      const counted = t`update monthly_usage m set files = m.files + d.n
          from unnest(${t.array([...added.keys()])}::text[], ${t.array([...added.values()])}::int[]) as d(a, n)
          where m.account_id = d.a and m.month = ${t.unsafe(THIS_MONTH)}`.execute();
      const written = writes(t, admitted).map((q) => q.execute());
      const events = admitted.filter((c) => isTerminal(c.row.status) && listening.has(c.row.account_id))
        .map((c) => enqueueConversionEvent(t, c.row.id));
      await Promise.all([counted, ...written, ...events]);
      this.stats.batches++;
      this.stats.conversions += admitted.length;
    });
    return refused;
  }
}

/** The SQLSTATE group_commit_check raises. */
const CHECK_FAILED = 'DP001';

/** A member's Idempotency-Key, as its claim's row is keyed. */
function keyOf(c: GroupedConversion): string {
  return `${c.row.account_id}\n${c.claim!.endpoint}\n${c.claim!.key}`;
}

/** Members with a key, in key order: two batches claiming the same keys wait, not deadlock. */
function byKey(items: GroupedConversion[]): GroupedConversion[] {
  return items.filter((c) => c.claim).map((c) => [keyOf(c), c] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, c]) => c);
}

/** A key claimed twice in one batch: the later member is refused, which the careful path decides. */
function hasKeyTwice(items: GroupedConversion[]): boolean {
  const keys = new Set<string>();
  for (const c of items) {
    if (!c.claim) continue;
    if (keys.has(keyOf(c))) return true;
    keys.add(keyOf(c));
  }
  return false;
}

/** Source files per account. */
function filesByAccount(items: GroupedConversion[]): Map<string, number> {
  const added = new Map<string, number>();
  for (const c of items) added.set(c.row.account_id, (added.get(c.row.account_id) ?? 0) + c.monthlyFiles);
  return added;
}

/**
 * Adds the batch's files to its accounts' counters (made when missing, locked in account order
 * as lockCounters does) and checks that each account stays within the smallest allowance of its
 * members (then every member fits, in any order), and that no account of a finished conversion
 * subscribes to its event.
 */
function checkedCounters(t: Sql, items: GroupedConversion[]) {
  const added = filesByAccount(items);
  const limits = new Map<string, number>();
  for (const c of items) limits.set(c.row.account_id, Math.min(limits.get(c.row.account_id) ?? Infinity, c.monthlyLimit));
  const accounts = [...added.keys()].sort();
  const finished = items.filter((c) => isTerminal(c.row.status));
  return t`with d as (select * from unnest(${t.array(accounts)}::text[], ${t.array(accounts.map((a) => added.get(a)!))}::int[],
        ${t.array(accounts.map((a) => limits.get(a)!))}::int[]) as d(a, n, lim)),
      up as (insert into monthly_usage (account_id, month, files) select a, ${t.unsafe(THIS_MONTH)}, n from d order by a
        on conflict (account_id, month) do update set files = monthly_usage.files + excluded.files
        returning account_id, files)
    select group_commit_check(
      not exists (select 1 from up join d on d.a = up.account_id where up.files > d.lim)
      and not exists (select 1 from webhook_endpoints
        where account_id = any(${t.array([...new Set(finished.map((c) => c.row.account_id))])}::text[]) and status = 'enabled'
          and event_types && ${t.array([...new Set(finished.map((c) => eventTypeOf(c.row.status)))])}::text[]))`;
}

/** Claims the batch's keys (in key order, as claimKeys) and checks that each was won. */
function checkedClaims(t: Sql, items: GroupedConversion[]) {
  const claiming = byKey(items);
  if (claiming.length === 0) return [];
  return [t`with won as (${insertClaims(t, claiming.map(claimRowOf))} returning 1)
    select group_commit_check((select count(*) from won) = ${claiming.length})`];
}

/** The claim row of a member with a key. */
function claimRowOf(c: GroupedConversion): IdempotencyClaimRow {
  return { accountId: c.row.account_id, endpoint: c.claim!.endpoint, key: c.claim!.key, fingerprint: c.claim!.fingerprint, conversionId: c.row.id };
}

/** The rows of admitted members: conversions, files, reservations and jobs, in that order. */
function writes(t: Sql, admitted: GroupedConversion[]) {
  const files = admitted.flatMap((c) => {
    const conv = { id: c.row.id, accountId: c.row.account_id, expiresAt: c.row.expires_at };
    return c.files.map((file) => ({ conv, file }));
  });
  const reserves = admitted.filter((c) => c.reserved !== undefined);
  const jobs = admitted.flatMap((c) => c.jobs ?? []);
  return [
    insertConversions(t, admitted.map((c) => c.row)),
    ...(files.length > 0 ? [insertFiles(t, files)] : []),
    ...(reserves.length > 0 ? [t`insert into ledger (account_id, conversion_id, kind, amount)
      select unnest(${t.array(reserves.map((c) => c.row.account_id))}::text[]), unnest(${t.array(reserves.map((c) => c.row.id))}::text[]),
        'reserve', -unnest(${t.array(reserves.map((c) => c.reserved!))}::int[])`] : []),
    ...(jobs.length > 0 ? [insertJobs(t, jobs)] : []),
  ];
}

/** The batch's accounts, sorted (the order their rows are locked in). */
function accountsOf(items: GroupedConversion[]): string[] {
  return [...new Set(items.map((c) => c.row.account_id))].sort();
}

/**
 * Locks the batch's accounts (FOR KEY SHARE, as lockAccounts: conversions have no foreign key on
 * them, migration 0016) and checks that none is gone; a batch with a member whose account was
 * deleted goes the careful way, which refuses that member alone.
 */
function checkedAccounts(t: Sql, items: GroupedConversion[]) {
  const accounts = accountsOf(items);
  return t`select group_commit_check((select count(*) from
      (select 1 from accounts where id = any(${t.array(accounts)}::text[]) order by id for key share) a) = ${accounts.length})`;
}

/** Makes and locks the batch's accounts' counter rows (in account order); their files so far.
 *  An account that is gone gets none (the caller refuses its members). */
async function lockCounters(t: Sql, items: GroupedConversion[]): Promise<Map<string, number>> {
  const accounts = accountsOf(items);
  const [, rows] = await Promise.all([
    t`insert into monthly_usage (account_id, month, files)
      select a, ${t.unsafe(THIS_MONTH)}, 0 from unnest(${t.array(accounts)}::text[]) as a
      where exists (select 1 from accounts where id = a)
      order by a on conflict (account_id, month) do nothing`,
    t`select account_id, files from monthly_usage
      where account_id = any(${t.array(accounts)}::text[]) and month = ${t.unsafe(THIS_MONTH)}
      order by account_id for update`,
  ]);
  return new Map(rows.map((r) => [r.account_id as string, Number(r.files)]));
}

/** Admits conversions in arrival order while they fit the month (counted by the caller). */
function admitMonthly(used: Map<string, number>, items: GroupedConversion[], refused: Map<GroupedConversion, Error>): GroupedConversion[] {
  const admitted: GroupedConversion[] = [];
  for (const c of items) {
    const account = c.row.account_id;
    const before = used.get(account) ?? 0;
    if (before + c.monthlyFiles > c.monthlyLimit) {
      refused.set(c, monthlyLimit(before, c.monthlyFiles, c.monthlyLimit));
      continue;
    }
    used.set(account, before + c.monthlyFiles);
    admitted.push(c);
  }
  return admitted;
}

/**
 * Claims the members' Idempotency-Keys in one statement (in key order: two batches claiming the
 * same keys wait for each other instead of deadlocking). A key held by a live claim, or by an
 * earlier member of this batch, refuses its member with KeyTaken; a claim past its lifetime is
 * taken over (insertClaims). The allowance such a member was counted in is not given to
 * another member of the batch (it can only refuse more, never admit too many).
 */
async function claimKeys(t: Sql, items: GroupedConversion[], refused: Map<GroupedConversion, Error>): Promise<GroupedConversion[]> {
  const first = new Map<string, GroupedConversion>();
  for (const c of items) {
    if (!c.claim) continue;
    if (first.has(keyOf(c))) refused.set(c, new KeyTaken());
    else first.set(keyOf(c), c);
  }
  if (first.size === 0) return items.filter((c) => !refused.has(c));
  const claiming = byKey([...first.values()]);
  const won = await t`${insertClaims(t, claiming.map(claimRowOf))} returning conversion_id`;
  const ids = new Set(won.map((r) => r.conversion_id as string));
  for (const c of claiming) if (!ids.has(c.row.id)) refused.set(c, new KeyTaken());
  return items.filter((c) => !refused.has(c));
}

/** The accounts of the batch's finished conversions that subscribe to their outcome. */
async function subscribers(t: Sql, items: GroupedConversion[]): Promise<Set<string>> {
  const finished = items.filter((c) => isTerminal(c.row.status));
  if (finished.length === 0) return new Set();
  const accounts = [...new Set(finished.map((c) => c.row.account_id))];
  const types = [...new Set(finished.map((c) => eventTypeOf(c.row.status)))];
  const rows = await t`select distinct account_id from webhook_endpoints
    where account_id = any(${t.array(accounts)}::text[]) and status = 'enabled'
      and event_types && ${t.array(types)}::text[]`;
  return new Set(rows.map((r) => r.account_id as string));
}

/** The files as the API's read of them would return them, for answering without a query. */
export function fileRowsOf(row: ConversionRow, files: NewFile[]): FileRow[] {
  return files.map((f) => ({
    id: f.id, conversion_id: row.id, position: f.position, role: f.role, source_id: f.sourceId ?? null,
    name: f.name, mime: f.mime, status: f.status ?? null, format: f.format ?? null, variant: f.variant ?? null,
    bytes: f.bytes, pages: f.pages ?? null, credits: f.credits ?? null, content: f.content ?? f.shown ?? null,
    blob: f.blob ?? null, error: f.error ?? null,
  })).sort((a, b) => a.position - b.position);
}
