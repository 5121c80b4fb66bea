// Webhooks (DESIGN.md §7), what this folder offers:
// - outbox.ts      enqueueConversionEvent(tx, id): the event + deliveries, in the caller's transaction
// - dispatcher.ts  WebhookDispatcher: the per-process delivery loop and the retry schedule
// - deliver.ts     one signed, SSRF-guarded, time-limited try (also used by POST …/test)
// - store.ts       endpoint rows, claims (SKIP LOCKED leases) and the attempt log
// - sign.ts        Standard Webhooks secrets and signatures
// - verify.ts      the receiver's check, as given in the README
// Events are enqueued by the jobs (jobs/finish.ts, group-commit.ts) in the transaction that ends a
// conversion; the Conversion they carry is store/conversion-json.ts's.
// May import: billing, converters, store, net and the bottom; never uploads, jobs, pool, server or
// cli (scripts/layers.mjs).
export { enqueueConversionEvent, EVENT_TYPES, TEST_EVENT_TYPE, type EventType } from './outbox.js';
export { WebhookDispatcher, RETRY_DELAYS_S, MAX_ATTEMPTS, retryDelayMs } from './dispatcher.js';
export { createSender, type Sender } from './deliver.js';
export { newSecret, sign, signedHeaders } from './sign.js';
export { verifyWebhook } from './verify.js';
