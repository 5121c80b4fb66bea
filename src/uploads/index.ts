// Chunked uploads, references to stored files, and retention (DESIGN.md §4, §6).
//
// - service.ts     UploadService: create, receive parts, complete (assembles), show
// - read-to-file.ts  a raw request body streamed to one file, MD5 on the way, with backpressure
// - assemble.ts    parts joined by stream copy; S3-style etags
// - store.ts       the uploads / upload_parts rows (migration 0003) and the Upload JSON
// - refs.ts        resolveSources: file_/upl_ references → staged sources (hard links)
// - sweeper.ts     Sweeper: deletes expired conversions and uploads, in any number of processes
// The HTTP routes are in src/server/routes/uploads.ts; downloads in src/server/stream-file.ts.
export { UploadService, partSizeFor, DEFAULT_PART_SIZE, MAX_PARTS, UPLOAD_TTL_MS } from './service.js';
export { readToFile, type WrittenFile } from './read-to-file.js';
export { resolveSources, type ResolvedSources } from './refs.js';
export { Sweeper, type SweepCounts, type SweeperOptions } from './sweeper.js';
export type { UploadJson, UploadStatus } from './store.js';
