// Chunked uploads, references to stored files, and retention (DESIGN.md §4, §6).
//
// - service.ts     UploadService: create, receive parts, complete (assembles), show
// - assemble.ts    parts joined by stream copy; S3-style etags
// - store.ts       the uploads / upload_parts rows (migration 0003) and the Upload JSON
// - refs.ts        resolveSources: file_/upl_ references → staged sources (hard links)
// - sweeper.ts     Sweeper: deletes expired conversions and uploads, in any number of processes
// The HTTP routes are in src/server/routes/uploads.ts (which reads bodies with server/read-to-file.ts);
// downloads in src/server/stream-file.ts.
// May import: webhooks, billing, converters, store, net and the bottom; never jobs, pool, server
// or cli (scripts/layers.mjs).
export { UploadService, partSizeFor, DEFAULT_PART_SIZE, MAX_PARTS, UPLOAD_TTL_MS } from './service.js';
export { resolveSources, type ResolvedSources } from './refs.js';
export { Sweeper, type SweepCounts, type SweeperOptions } from './sweeper.js';
export type { UploadJson, UploadStatus } from './store.js';
