// The HTTP server (DESIGN.md §1, the spec's API), what this folder offers:
// - app.ts                startApp: one process — the pool, the job runner, the webhook
//                         dispatcher, the sweepers — serving on HTTP_THREADS acceptors
// - acceptor.ts           one uWebSockets.js app and its routes; acceptors.ts, acceptor-thread.ts
//                         and acceptor-link.ts run more of them on threads of their own
// - routes/               the endpoints; router.ts the route table
// - respond.ts            the request context and answers (problem+json, JSON, clean-ups)
// - body-reader.ts, body.ts, read-to-file.ts, convert-request.ts: request bodies, read and checked
// - auth.ts               API keys to principals, cached; metrics.ts the Prometheus registry
// - openapi*.ts           the served OpenAPI document; stream-file.ts file downloads
// May import: every layer below (pool, jobs, uploads, webhooks, billing, converters, store, net,
// the bottom); never cli (scripts/layers.mjs).
export { startApp, loadUws, type RunningApp, type StartOptions } from './app.js';
