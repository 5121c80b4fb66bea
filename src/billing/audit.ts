// Keeps the gate's copy of each active account's reservations in line with the ledger. The
// contract (gate.ts) writes the ledger first and tells the gate after; when the telling is lost,
// the copy stays wrong until something rebuilds the account, which only a restart of an empty
// Redis does. What is lost, and how the audit mends it:
// - a settle or release told to a gate that was away (Redis down or partitioned; its data kept,
//   as with AOF): the gate still holds a reservation the ledger has released, so its balance is
//   low and a concurrency slot is taken for good → settle it in the gate as the ledger says, once
//   a look a pass earlier saw it too (a settle in flight is told by its own process meanwhile);
// - a reservation whose conversion was never committed (the process died between the gate's
//   reserve and the insert, or the insert failed and so did the release) → release it in the
//   gate, once it has been seen without a ledger row for longer than any insert takes;
// - a reservation the ledger has open but the gate does not hold (a rebuild that read the ledger
//   just before the row committed; a release after a commit whose answer was lost): the balance
//   is high → adopt it, once it has been seen missing for as long.
// Every step is one of the gate's atomic operations and safe to repeat; a step that races a
// settle in flight is mended at the next pass. Accounts are audited while they are active in this
// process (watch() at each reservation), and every process audits its own.
// - a grant the gate never heard of (the admin CLI run without Redis settings, or a gate that was
//   away when told): every pass also looks at the accounts granted credits lately (the last
//   minute, the last day at a process's first pass), whether active here or not, and when the
//   gate's balance lacks money the ledger has, beyond what the submits and settles in flight
//   explain, adds the difference to the gate (unheard).
import type { Sql } from '../store/db.js';
import { sameHoldings, type Gate, type Holdings } from './gate.js';
import { ledgerEntries, readLedger } from './ledger.js';

/** How far back each pass looks for grants: far longer than a grant's transaction takes to
 *  commit after its row's timestamp, so no grant falls between two passes. */
const GRANT_OVERLAP_S = 60;

/** How long an account stays audited after its last reservation here. */
export const WATCH_MS = 15 * 60 * 1000;
/** Seconds a reservation stays out of line before it is released or adopted (GATE_AUDIT_GRACE_S,
 *  for tests and tuning): longer than any submit takes from its reservation to its commit. */
export const AUDIT_GRACE_S = Number(process.env.GATE_AUDIT_GRACE_S) || 30;

/** The least time between the two looks that see a settled reservation still held before the
 *  audit settles it in the gate (passes are MEND_INTERVAL_S apart, so in a server the second
 *  look is a pass later); a settle's tell follows its commit within milliseconds. */
const SETTLE_GRACE_MS = 250;

export interface AuditCounts {
  /** Reservations the ledger had settled: settled in the gate too. */
  settled: number;
  /** Reservations with no ledger row: released. */
  released: number;
  /** Open ledger reservations the gate had lost: adopted. */
  adopted: number;
  /** Granted accounts whose gate balance missed money of the ledger (a grant): adjusted by it. */
  adjusted: number;
}

export class GateAudit {
  private readonly watched = new Map<string, number>();
  /** `${kind}:${account}:${conversion}` -> when first seen out of line. */
  private readonly suspects = new Map<string, number>();
  private running = false;
  /** Granted accounts whose gate moved under every look so far: looked at again each pass. */
  private readonly unsure = new Set<string>();
  /** The database's clock at the start of the last pass; undefined before the first. */
  private lastPass: Date | undefined;

  constructor(private sql: Sql, private gate: Gate, private graceMs = AUDIT_GRACE_S * 1000) {}

  watch(accountId: string): void {
    this.watched.set(accountId, Date.now());
  }

  /** The accounts audited now: the ones that reserved here lately. */
  watching(): string[] {
    return [...this.watched.keys()];
  }

  /** One pass over the watched accounts; a pass already under way is not doubled. */
  async run(): Promise<AuditCounts> {
    const total: AuditCounts = { settled: 0, released: 0, adopted: 0, adjusted: 0 };
    if (this.running) return total;
    this.running = true;
    try {
      for (const [accountId, seen] of [...this.watched]) {
        const c = await this.account(accountId);
        total.settled += c.settled;
        total.released += c.released;
        total.adopted += c.adopted;
        const inLine = c.outOfLine === 0;
        if (inLine && Date.now() - seen > WATCH_MS) this.watched.delete(accountId);
      }
      // After the reservations are mended, so that a difference left is the balance's own.
      total.adjusted = await this.granted();
    } finally {
      this.running = false;
    }
    return total;
  }

  /** Brings the gate in line with the ledger for the accounts granted credits since the last
   *  pass (see the head of this file); says how many were adjusted. */
  private async granted(): Promise<number> {
    const [{ now }] = await this.sql<Array<{ now: Date }>>`select now() as now`;
    const since = this.lastPass === undefined
      ? new Date(now.getTime() - 24 * 3600 * 1000)
      : new Date(this.lastPass.getTime() - GRANT_OVERLAP_S * 1000);
    // migration 0014's index: the grants are few, the ledger's other rows three a conversion
    const accounts = await this.sql<Array<{ account_id: string }>>`
      select distinct account_id from ledger where kind = 'grant' and created_at > ${since}`;
    let adjusted = 0;
    for (const accountId of new Set([...accounts.map((a) => a.account_id), ...this.unsure])) {
      const found = await this.unheard(accountId);
      if (found === undefined) {
        this.unsure.add(accountId);
        continue;
      }
      this.unsure.delete(accountId);
      if (found && found.missing !== 0 && (await this.gate.mend(accountId, found.missing, found.seen)).applied) adjusted++;
    }
    this.lastPass = now;
    return adjusted;
  }

  /**
   * What the gate's balance lacks of the ledger's (negative: holds beyond it) once every submit
   * and settle in flight is accounted for: money the gate was never told of, such as a grant.
   * The gate is read before and after the ledger, and the answer counts only when it did not move
   * in between: then every conversion stood still on the gate's side while the one ledger
   * statement saw it at some step, and each step has a known effect on the two balances:
   * - held by the gate, no ledger row yet (a submit in flight): the gate has taken its credits;
   * - held by the gate, released in the ledger (the gate not told yet): the gate has taken the
   *   reservation where the ledger took the charge;
   * - open in the ledger, not held by the gate (lost; account() adopts it): the ledger has taken
   *   its credits.
   * Null when the gate does not hold the account (its next use reads the ledger); undefined when
   * the gate moved: a busy account is asked again at every pass until one finds it still. The
   * mend is made only while the gate is still as seen (Gate.mend), so that the audits of two
   * processes that saw the same moment add the difference once. Dropping the account instead, to
   * be rebuilt from the ledger, would lose the reservations of its submits in flight, and make
   * every request of a busy account read the whole ledger until a rebuild lands between two
   * settles (the 2026-11-28 bench's E stalled minutes so).
   */
  private async unheard(accountId: string): Promise<{ missing: number; seen: Holdings } | null | undefined> {
    const before = await this.gate.holdings(accountId);
    if (before === null) return null; // not loaded: its next use reads the ledger
    const ledger = await readLedger(this.sql, accountId, [...before.held.keys()]);
    const after = await this.gate.holdings(accountId);
    if (after === null) return null;
    if (!sameHoldings(before, after)) return undefined;
    let expected = ledger.balance;
    const open = new Map(ledger.reservations.map((r) => [r.conversionId, r.credits]));
    for (const [conversionId, credits] of before.held) {
      const entry = ledger.about?.get(conversionId);
      if (open.has(conversionId)) expected += open.get(conversionId)! - credits;
      else if (!entry || entry.reserved === null) expected -= credits;
      else if (entry.released) expected -= credits - entry.charged;
    }
    for (const [conversionId, credits] of open) if (!before.held.has(conversionId)) expected += credits;
    return { missing: expected - before.balance, seen: before };
  }

  /** Audits one account now. */
  async account(accountId: string): Promise<Omit<AuditCounts, 'adjusted'> & { outOfLine: number }> {
    const out = { settled: 0, released: 0, adopted: 0, outOfLine: 0 };
    // The gate first, the ledger after: a reservation made in between is in the ledger only if
    // the gate had it first, and adopt() leaves a held reservation alone.
    const held = await this.gate.held(accountId);
    if (!held) return out; // not loaded: the next reserve rebuilds it from the ledger
    const entries = await ledgerEntries(this.sql, accountId, [...held.keys()]);
    const now = Date.now();
    const keep = new Set<string>();
    for (const conv of held.keys()) {
      const entry = entries.get(conv);
      if (entry?.released) {
        // Settled in the ledger, still held in the gate: lost, or a settle committed and about to
        // be told. Mended when an earlier look saw it too (a pass apart), so a settle in flight is
        // left to its own tell instead of being settled here first and reported as mended.
        out.outOfLine++;
        if (this.due(`settle:${accountId}:${conv}`, now, keep, Math.min(this.graceMs, SETTLE_GRACE_MS))) {
          const s = await this.gate.settle(accountId, conv, entry.charged);
          if (s.settled) out.settled++;
        }
      } else if (!entry || entry.reserved === null) {
        out.outOfLine++;
        if (this.due(`orphan:${accountId}:${conv}`, now, keep)) {
          const s = await this.gate.release(accountId, conv);
          if (s.settled) out.released++;
        }
      }
    }
    // Open reservations of the account's recent conversions (a lost one is lost when it is made
    // or released, so the last day is plenty). Read from the unsettled ones (migration 0011's
    // index: a release and settled_at are written by one statement), the few in flight, not
    // from every conversion of the day: an account sending 50 documents a second has 4.3 million
    // of those, read at every pass of every process.
    const open = await this.sql`
      select c.id as conversion_id, -r.amount as n from conversions c
      join ledger r on r.conversion_id = c.id and r.kind = 'reserve'
      where c.operation = 'parse' and c.settled_at is null
        and c.account_id = ${accountId} and c.created_at > now() - interval '1 day'
        and not exists (select 1 from ledger x where x.conversion_id = c.id and x.kind = 'release')`;
    for (const r of open) {
      const conv = r.conversion_id as string;
      if (held.has(conv)) continue;
      out.outOfLine++;
      if (this.due(`lost:${accountId}:${conv}`, now, keep) && await this.gate.adopt(accountId, conv, Number(r.n))) out.adopted++;
    }
    // Suspects of this account not seen again were in flight, not lost.
    for (const key of this.suspects.keys()) {
      if (key.includes(`:${accountId}:`) && !keep.has(key)) this.suspects.delete(key);
    }
    return out;
  }

  /** True once `key` has been out of line for `grace` ms; remembers it meanwhile. */
  private due(key: string, now: number, keep: Set<string>, grace = this.graceMs): boolean {
    const first = this.suspects.get(key);
    if (first === undefined) {
      this.suspects.set(key, now);
      keep.add(key);
      return false;
    }
    if (now - first < grace) {
      keep.add(key);
      return false;
    }
    this.suspects.delete(key);
    return true;
  }
}
