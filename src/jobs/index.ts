// Conversions and their jobs (DESIGN.md §4), what this folder offers:
// - service.ts       ConversionService: the façade the server uses (plan, accept, waitFor, remove)
// - context.ts       what its steps share: their context and the shapes passed between them
// - plan.ts          sniff, count and price the sources; URLs fetched at admission
// - admit.ts         references, plan limits, the gate reservation with the idempotency claim
// - persist.ts       the insert (or an in-request render), the blobs placed, the jobs started
// - run-job.ts       one durable job: convert, record the outcome under the lease, settle
// - outputs.ts       the output rows of a converted source
// - settle.ts        charge and release credits, tell the gate, the mending sweep
// - wait.ts          the sync limits, the wait window, the answer built from what the jobs recorded
// - remove.ts        deleting a conversion
// - queue.ts         the jobs table: claims, leases, hand-backs
// - runner.ts        JobRunner: the per-process loop that runs claimed jobs
// - executor.ts      Executor: where a conversion runs; InlineExecutor in this thread
// - group-commit.ts  GroupCommit: submits arriving together stored in one transaction (renders
//                    finished, paid submits queued with their jobs, reservations and key claims)
// - finish.ts        a source's outcome recorded; the charge and webhook event of a conversion it ends
// May import: uploads, webhooks, billing, converters, store, net and the bottom (types, plans,
// config, errors, log); never pool, server or cli (scripts/layers.mjs).
export {
  ConversionService, recording, kindOfEndpoint, PENDING_GRACE_MS, SYNC_MAX_SOURCES, SYNC_MAX_PDF_PAGES,
  type Accepted, type AsyncReason, type Billing, type LifecycleOptions, type SubmitContext, type Submitted, type Track,
} from './service.js';
export { JobRunner, type JobHandler } from './runner.js';
export { InlineExecutor, type Executor, type Task } from './executor.js';
export { GroupCommit, KeyTaken, type FinishedConversion, type GroupedConversion } from './group-commit.js';
export type { JobOutcome, WaitWindow } from './context.js';
export { LEASE_S, MAX_ATTEMPTS, type JobRow } from './queue.js';
