// Admitting a submit (ConversionService.accept): file_/upl_ references resolved, per-file sizes
// and plan limits checked, then — unless it is a render, which costs nothing and skips the gate —
// ONE gate reservation carrying the Redis idempotency claim, then the insert (persist.ts). A
// replay creates nothing; an insert that fails gives the gate its reservation back, or, with the
// database away (the commit may have happened), keeps it until the ledger says.
import { isDependencyDown } from '../errors.js';
import { isRender, ENDPOINTS } from '../converters/registry.js';
import { Refusal, refusalError, reserveWithRebuild, type IdempotencyClaim } from '../billing/gate.js';
import type { PlanLimits } from '../plans.js';
import { awaitClaim, checkFileSizes, checkPlanLimits, findClaim, requestFingerprint, IDEMPOTENCY_TTL_S } from '../billing/admission.js';
import { newId } from '../store/ids.js';
import type { Principal } from '../store/accounts.js';
import type { ConvertRequest } from '../types.js';
import { resolveSources } from '../uploads/refs.js';
import type {
  Accepted, ConversionContext, Idem, PlannedEstimate, SubmitContext, Submitted, Track, WaitWindow,
} from './context.js';
import { planSources } from './plan.js';
import { KeyTaken } from './persist.js';

/** The insert step, persist.ts's persist bound to the context. Admission calls it through the
 *  service (ConversionService's persist member), where a test can wrap it. */
export type Persist = (p: Principal, req: ConvertRequest, planned: PlannedEstimate[], conversionId: string,
  credits: number, gated: boolean, idem: Idem | undefined, limits: PlanLimits, window?: WaitWindow) => Promise<Accepted>;

/** How long a replay waits for the first request with its key to commit its conversion. */
const REPLAY_WAIT_MS = 5_000;

/**
 * Admits and starts a conversion: plan limits, then one gate reservation (with the idempotency
 * claim), then the insert. On a replay nothing is created; the caller's staged files stay
 * where they are (the request's clean-ups remove them).
 */
export async function accept(ctx: ConversionContext, persist: Persist, p: Principal, given: ConvertRequest, from: SubmitContext,
  track: Track): Promise<Submitted> {
  // file_/upl_ references become staged sources (hard links the conversion adopts); links not
  // adopted (a replay, a refusal) are removed whatever happens.
  const refs = await resolveSources(ctx.sql, ctx.blobs, p, given);
  try {
    return await admit(ctx, persist, p, { ...given, sources: [...given.sources, ...refs.sources] }, given, from, track);
  } finally {
    await refs.release();
  }
}

async function admit(ctx: ConversionContext, persist: Persist, p: Principal, req: ConvertRequest, given: ConvertRequest,
  from: SubmitContext, track: Track): Promise<Submitted> {
  const limits = ctx.billing.limits(p.plan);
  checkFileSizes(req.sources, limits);
  const endpoint = ENDPOINTS[req.kind];
  const idem: Idem | undefined = from.idempotencyKey === undefined ? undefined : {
    endpoint,
    key: from.idempotencyKey,
    fingerprint: await requestFingerprint(from.method, from.path,
      { ...req.options, store: req.store, files: req.fileRefs, uploads: req.uploadRefs }, req.metadata,
      // References are in the fingerprint by id; only the request's own bytes are hashed.
      given.sources),
  };
  // A retry of a committed URL conversion is answered before its URLs are fetched again (other
  // kinds only read local files, and are replayed by the gate's claim as before).
  if (req.kind === 'url' && idem) {
    const committed = await findClaim(ctx.sql, p.accountId, idem.endpoint, idem.key);
    if (committed) return replayOf(committed, idem);
  }

  const planned = await planSources(ctx, req, track);
  // A URL's size is known once it is fetched: the plan's per-file size applies to that too.
  if (req.kind === 'url') checkFileSizes(planned, limits);
  await checkPlanLimits(ctx.sql, p.accountId, limits,
    planned.map((s) => ({ name: s.name, bytes: s.bytes, pages: s.count.pages })), req.store, !isRender(req.kind));

  const credits = planned.reduce((a, s) => a + s.credits, 0);
  const gated = !isRender(req.kind);
  let conversionId = newId('conv');
  // The gate's balance right after this conversion's reservation, for its answer.
  let balance: number | undefined;

  if (gated) {
    const reserved = await reserve(ctx, p, conversionId, credits, limits, idem);
    if (reserved.kind === 'replay') return reserved;
    conversionId = reserved.conversionId;
    balance = reserved.balance;
  }
  try {
    const accepted = await persist(p, req, planned, conversionId, credits, gated, idem, limits, from.window);
    return { kind: 'accepted', accepted: balance === undefined ? accepted : { ...accepted, balance } };
  } catch (err) {
    // Nothing of this conversion reached the ledger: give the gate its reservation back. With
    // the database away the insert may have committed all the same: the ledger says, later.
    if (gated && isDependencyDown(err)) releaseIfUncommitted(ctx, p.accountId, conversionId);
    else if (gated) await ctx.billing.gate.release(p.accountId, conversionId).catch(() => {});
    if (!(err instanceof KeyTaken) || !idem) throw err;
    const claim = await findClaim(ctx.sql, p.accountId, idem.endpoint, idem.key);
    if (!claim) throw err;
    return replayOf(claim, idem);
  }
}

/** The gate's answer for a new conversion id: reserved (under that id) or a replay. */
async function reserve(ctx: ConversionContext, p: Principal, conversionId: string, credits: number, limits: PlanLimits, idem: Idem | undefined)
  : Promise<{ kind: 'reserved'; conversionId: string; balance: number } | { kind: 'replay'; conversionId: string }> {
  const claim: IdempotencyClaim | undefined = idem && {
    key: `${p.accountId}:${idem.endpoint}:${idem.key}`, fingerprint: idem.fingerprint, ttlSeconds: IDEMPOTENCY_TTL_S,
  };
  const { gate, ledger } = ctx.billing;
  const req = { accountId: p.accountId, conversionId, credits, concurrencyLimit: limits.concurrency };
  ctx.audit.watch(p.accountId);
  let r = await reserveWithRebuild(gate, { ...req, idempotency: claim }, ledger.readLedger);
  if (r.kind === 'replay') {
    // The first request with this key may still be committing: wait for its claim in Postgres.
    const found = await awaitClaim(ctx.sql, p.accountId, idem!.endpoint, idem!.key, REPLAY_WAIT_MS);
    if (found) return replayOf(found, idem!);
    // The claim in the gate names a conversion that was never created (its request failed
    // after reserving). Postgres is the truth: go on without the gate's claim; the insert's
    // own claim still keeps concurrent retries to one conversion.
    r = await reserveWithRebuild(gate, req, ledger.readLedger);
  }
  if (r.kind === 'reserved') return { kind: 'reserved', conversionId, balance: r.balance };
  if (r.kind === 'refused') throw refusalError(r);
  throw new Error(`billing: unexpected reserve answer ${r.kind}`);
}

function replayOf(claim: { fingerprint: string; conversionId: string }, idem: Idem): { kind: 'replay'; conversionId: string } {
  if (claim.fingerprint !== idem.fingerprint) throw refusalError({ kind: 'refused', refusal: Refusal.IdempotencyKeyReused });
  return { kind: 'replay', conversionId: claim.conversionId };
}

/**
 * The gate reservation of a submit whose insert failed while the database was away. The commit
 * may have happened with only its answer lost (the connection died): then the conversion runs
 * and settles as usual, and giving the reservation back now would leave the gate short of its
 * charge. So it is kept until the ledger answers, and released only if no reservation row is
 * there. Should this process stop first, the gate audit of the account releases it.
 */
function releaseIfUncommitted(ctx: ConversionContext, accountId: string, conversionId: string): void {
  ctx.audit.watch(accountId);
  void (async () => {
    for (let pause = 1_000; !ctx.stopping(); pause = Math.min(pause * 2, 5_000)) {
      await new Promise((r) => setTimeout(r, pause).unref());
      try {
        const [row] = await ctx.sql`select 1 from ledger where conversion_id = ${conversionId} and kind = 'reserve'`;
        if (!row) await ctx.billing.gate.release(accountId, conversionId);
        return;
      } catch (err) {
        if (!isDependencyDown(err)) return ctx.billing.onError?.(err, `releasing ${conversionId}`);
      }
    }
  })();
}
