// Billing (DESIGN.md §2, §3, §5), what this folder offers:
// - gate.ts        Gate: the atomic decision whether a submit may spend credits (and the rate limit)
// - redis-gate.ts  RedisGate: the gate shared by every process, on Redis
// - local-gate.ts  LocalGate: the gate in process memory (embedded single-process mode)
// - ledger.ts      the Postgres credit ledger behind the gate: grants, reservations, settlements
// - audit.ts       GateAudit: keeps the gate's reservations in line with the ledger
// - admission.ts   plan limits and idempotency claims a submit must pass before it reserves
// - pricing.ts     priceSource: the credits of one source, from its kind, count and options
// May import: store, converters, net and the bottom (types, plans, config, errors, log); never
// webhooks, uploads, jobs, pool or server (scripts/layers.mjs). Pricing takes plain counts and a
// kind name from types.ts.
export type { Gate, ReserveRequest, ReserveResult, SettleResult } from './gate.js';
export { RedisGate } from './redis-gate.js';
export { LocalGate } from './local-gate.js';
export { Ledger, grantCredits, readLedger, MAX_GRANT } from './ledger.js';
export { GateAudit } from './audit.js';
export { checkPlanLimits, limitsFor } from './admission.js';
export { priceSource } from './pricing.js';
