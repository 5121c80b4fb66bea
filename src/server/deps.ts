// What the route handlers are given: one object built at start-up (see app.ts).
import type { Config } from '../config.js';
import { refusalError, type BalanceRead, type Gate } from '../billing/gate.js';
import type { Ledger } from '../billing/ledger.js';
import type { Plan, PlanLimits } from '../plans.js';
import type { Db } from '../store/db.js';
import type { Blobs } from '../store/blobs.js';
import type { Authenticator } from './auth.js';
import type { Principal } from '../store/accounts.js';
import type { ConversionService } from '../jobs/service.js';
import type { Logger } from '../log.js';
import type { Metrics } from './metrics.js';
import type { Ctx } from './respond.js';

export interface Deps {
  config: Config;
  db: Db;
  blobs: Blobs;
  auth: Authenticator;
  conversions: ConversionService;
  /** The billing gate (RedisGate with REDIS_URL, else the in-process LocalGate). */
  gate: Gate;
  ledger: Ledger;
  /** A plan's limits, PLAN_OVERRIDES applied. */
  limits(plan: Plan): PlanLimits;
  log: Logger;
  /** Prometheus counters of this app (src/server/metrics.ts says who increments what). */
  metrics: Metrics;
}

/** Authenticates the request and remembers the principal on the context (for logs). */
export async function principalOf(deps: Deps, ctx: Ctx): Promise<Principal> {
  const p = await deps.auth.authenticate(ctx.headers);
  ctx.principal = p;
  return p;
}

/**
 * Per-account request rate of the convert and estimate endpoints: 429 rate_limited when over.
 * Allowed, the answer is the balance the gate held at that moment (read in the same round trip).
 */
export async function checkRate(deps: Deps, p: Principal): Promise<BalanceRead> {
  const r = await deps.gate.rateLimit(p.accountId, deps.limits(p.plan).requestsPerMinute);
  if (!r.allowed) throw refusalError(r);
  return r.balance;
}
