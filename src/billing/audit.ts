// Keeps the gate's copy of each active account's reservations in line with the ledger. The
// contract (gate.ts) writes the ledger first and tells the gate after; when the telling is lost,
// the copy stays wrong until something rebuilds the account, which only a restart of an empty
// Redis does. What is lost, and how the audit mends it:
// - a settle or release told to a gate that was away (Redis down or partitioned; its data kept,
//   as with AOF): the gate still holds a reservation the ledger has released, so its balance is
//   low and a concurrency slot is taken for good → settle it in the gate as the ledger says;
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
//   gate's balance differs from the ledger's, drops the account from the gate (forget) so that
//   its next use rebuilds it from the ledger.
import type { Sql } from '../store/db.js';
import type { Gate } from './gate.js';
import { readLedger } from './ledger.js';

/** How far back each pass looks for grants: far longer than a grant's transaction takes to
 *  commit after its row's timestamp, so no grant falls between two passes. */
const GRANT_OVERLAP_S = 60;

/** How long an account stays audited after its last reservation here. */
const WATCH_MS = 15 * 60 * 1000;
/** Seconds a reservation stays out of line before it is released or adopted (GATE_AUDIT_GRACE_S,
 *  for tests and tuning): longer than any submit takes from its reservation to its commit. */
export const AUDIT_GRACE_S = Number(process.env.GATE_AUDIT_GRACE_S) || 30;

export interface AuditCounts {
  /** Reservations the ledger had settled: settled in the gate too. */
  settled: number;
  /** Reservations with no ledger row: released. */
  released: number;
  /** Open ledger reservations the gate had lost: adopted. */
  adopted: number;
  /** Granted accounts whose gate balance disagreed with the ledger: dropped to be rebuilt. */
  rebuilt: number;
}

export class GateAudit {
  private readonly watched = new Map<string, number>();
  /** `${kind}:${account}:${conversion}` -> when first seen out of line. */
  private readonly suspects = new Map<string, number>();
  private running = false;
  /** The database's clock at the start of the last pass; undefined before the first. */
  private lastPass: Date | undefined;

  constructor(private sql: Sql, private gate: Gate, private graceMs = AUDIT_GRACE_S * 1000) {}

  watch(accountId: string): void {
    this.watched.set(accountId, Date.now());
  }

  /** One pass over the watched accounts; a pass already under way is not doubled. */
  async run(): Promise<AuditCounts> {
    const total: AuditCounts = { settled: 0, released: 0, adopted: 0, rebuilt: 0 };
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
      total.rebuilt = await this.granted();
    } finally {
      this.running = false;
    }
    return total;
  }

  /** Brings the gate in line with the ledger for the accounts granted credits since the last
   *  pass (see the head of this file); says how many were dropped to be rebuilt. */
  private async granted(): Promise<number> {
    const [{ now }] = await this.sql<Array<{ now: Date }>>`select now() as now`;
    const since = this.lastPass === undefined
      ? new Date(now.getTime() - 24 * 3600 * 1000)
      : new Date(this.lastPass.getTime() - GRANT_OVERLAP_S * 1000);
    const accounts = await this.sql<Array<{ account_id: string }>>`
      select distinct account_id from ledger where kind = 'grant' and created_at > ${since}`;
    let rebuilt = 0;
    for (const { account_id: accountId } of accounts) {
      const held = await this.gate.balance(accountId);
      if (held === null) continue; // not loaded: its next use reads the ledger
      const ledger = await readLedger(this.sql, accountId);
      if (held === ledger.balance) continue;
      // A submit in flight (reserved in the gate, its ledger row not committed yet) lowers the
      // gate's balance by its credits: that is no grant the gate missed, and dropping the account
      // then would only make the next submit rebuild it.
      const inLedger = new Set(ledger.reservations.map((r) => r.conversionId));
      let inFlight = 0;
      for (const [conversionId, credits] of (await this.gate.held(accountId)) ?? []) {
        if (!inLedger.has(conversionId)) inFlight += credits;
      }
      if (inFlight > 0 && held + inFlight === ledger.balance) continue;
      await this.gate.forget(accountId);
      rebuilt++;
    }
    this.lastPass = now;
    return rebuilt;
  }

  /** Audits one account now. */
  async account(accountId: string): Promise<Omit<AuditCounts, 'rebuilt'> & { outOfLine: number }> {
    const out = { settled: 0, released: 0, adopted: 0, outOfLine: 0 };
    // The gate first, the ledger after: a reservation made in between is in the ledger only if
    // the gate had it first, and adopt() leaves a held reservation alone.
    const held = await this.gate.held(accountId);
    if (!held) return out; // not loaded: the next reserve rebuilds it from the ledger
    const rows = held.size === 0 ? [] : await this.sql`
      select conversion_id, kind, -amount as n from ledger
      where conversion_id in ${this.sql([...held.keys()])} and kind in ('reserve', 'release', 'charge')`;
    const byConv = new Map<string, Map<string, number>>();
    for (const r of rows) {
      const m = byConv.get(r.conversion_id as string) ?? new Map<string, number>();
      m.set(r.kind as string, Number(r.n));
      byConv.set(r.conversion_id as string, m);
    }
    const now = Date.now();
    const keep = new Set<string>();
    for (const conv of held.keys()) {
      const m = byConv.get(conv);
      if (m?.has('release')) {
        const s = await this.gate.settle(accountId, conv, m.get('charge') ?? 0);
        if (s.settled) out.settled++;
      } else if (!m?.has('reserve')) {
        out.outOfLine++;
        if (this.due(`orphan:${accountId}:${conv}`, now, keep)) {
          const s = await this.gate.release(accountId, conv);
          if (s.settled) out.released++;
        }
      }
    }
    // Open reservations of the account's recent conversions (a lost one is lost when it is made
    // or released, so the last day is plenty; the account's index keeps this cheap).
    const open = await this.sql`
      select c.id as conversion_id, -r.amount as n from conversions c
      join ledger r on r.conversion_id = c.id and r.kind = 'reserve'
      where c.account_id = ${accountId} and c.created_at > now() - interval '1 day'
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

  /** True once `key` has been out of line for graceMs; remembers it meanwhile. */
  private due(key: string, now: number, keep: Set<string>): boolean {
    const first = this.suspects.get(key);
    if (first === undefined) {
      this.suspects.set(key, now);
      keep.add(key);
      return false;
    }
    if (now - first < this.graceMs) {
      keep.add(key);
      return false;
    }
    this.suspects.delete(key);
    return true;
  }
}
