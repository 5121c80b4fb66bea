// The one plans config (DESIGN.md §2): what each plan may do. Limits are checked at submit, never
// at estimate. Sizes are binary units: "100 MB" is 100 MiB = 104,857,600 bytes, "1 GB" is 1 GiB.
// `free` has no API access at all (403 subscription_required), so every one of its limits is 0:
// nothing may be converted, stored, run or requested with it.

export type Plan = 'free' | 'lite' | 'pro' | 'max';

export const PLANS: readonly Plan[] = ['free', 'lite', 'pro', 'max'];

export interface PlanLimits {
  /** Largest source file, in bytes (413 file_too_large / upload_too_large above it). */
  fileBytes: number;
  /** Most pages in one file (422 page_cap_exceeded above it). */
  pageCap: number;
  /** Files per calendar month (403 upload_limit_exceeded above it). */
  filesPerMonth: number;
  /** Bytes kept in the account library (403 storage_limit_exceeded above it). */
  storageBytes: number;
  /** Conversions running at once (429 concurrency_limited above it). */
  concurrency: number;
  /** API requests per minute (429 rate_limited above it). */
  requestsPerMinute: number;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

const LIMITS: Readonly<Record<Plan, Readonly<PlanLimits>>> = Object.freeze({
  free: Object.freeze({
    fileBytes: 0, pageCap: 0, filesPerMonth: 0, storageBytes: 0, concurrency: 0, requestsPerMinute: 0,
  }),
  lite: Object.freeze({
    fileBytes: 100 * MiB, pageCap: 300, filesPerMonth: 1_000, storageBytes: 1 * GiB,
    concurrency: 2, requestsPerMinute: 120,
  }),
  pro: Object.freeze({
    fileBytes: 1 * GiB, pageCap: 2_000, filesPerMonth: 20_000, storageBytes: 25 * GiB,
    concurrency: 8, requestsPerMinute: 1_200,
  }),
  max: Object.freeze({
    fileBytes: 5 * GiB, pageCap: 10_000, filesPerMonth: 200_000, storageBytes: 250 * GiB,
    concurrency: 32, requestsPerMinute: 6_000,
  }),
});

/** True for the plan names this service knows (use it on values read from the database). */
export function isPlan(value: unknown): value is Plan {
  return typeof value === 'string' && (PLANS as readonly string[]).includes(value);
}

/** The limits of a plan; throws on an unknown plan name rather than guessing. */
export function planLimits(plan: Plan): Readonly<PlanLimits> {
  if (!isPlan(plan)) throw new TypeError(`unknown plan: ${String(plan)}`);
  return LIMITS[plan];
}

/** API access needs an active lite, pro or max subscription. */
export function hasApiAccess(plan: Plan): boolean {
  return isPlan(plan) && plan !== 'free';
}
