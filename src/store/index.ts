// Storage (DESIGN.md §4, §6), what this folder offers:
// - db.ts               openDb: PostgreSQL (DATABASE_URL) or embedded PGlite, migrations
// - accounts.ts         accounts, API keys and the Principal a request acts as
// - conversions.ts      conversion and file rows: insert, record a source's outcome, roll up, read
// - conversion-json.ts  the Conversion and File objects as the API shows them (server and webhooks)
// - cursor.ts           opaque pagination cursors
// - blobs.ts            document bytes on disk under DATA_DIR
// - ids.ts              public ids and random tokens
// Storage emits nothing: what ends with a conversion (credits, webhook events) is the jobs' to add
// in the same transaction (jobs/finish.ts).
// May import: the bottom only (types, plans, config, errors, log) (scripts/layers.mjs).
export { openDb, type Db, type Sql } from './db.js';
export { findKey, type KeyRecord, type Principal } from './accounts.js';
export { Blobs } from './blobs.js';
export { newId } from './ids.js';
export { conversionJson, type ConversionJson } from './conversion-json.js';
