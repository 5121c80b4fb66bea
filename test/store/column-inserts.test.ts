// Conversions and files are inserted one text array a column (store/db.ts textColumn), the
// statement casting each column, files' contents one parameter each (insertFiles): whatever a
// client sends (names, Markdown, error details) must be stored exactly as given, NULL must stay
// NULL and the string "null" a string, on Postgres and on the embedded database alike.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { openDb, type Db } from '../../src/store/db.js';
import { insertConversions, insertFiles, type ConversionRow, type NewFile } from '../../src/store/conversions.js';
import { seedEmbedded } from '../helpers/embedded-template.js';
import { dropSchema, PG_URL } from '../helpers/world.js';

/** Text that an array literal has to quote or escape, and text that looks like its syntax. */
const AWKWARD = ['a "quoted" name, with {braces}', 'back\\slash \\" and \\\\', 'null', 'NULL', '', ' padded ',
  'line\nbreak\ttab', 'ünïcödé ✓ 漢字 🙂', '{"looks":"like json"}', ',', '"', '\\'];

async function roundTrip(t: Test, db: Db): Promise<void> {
  await db.sql`insert into accounts (id, name, plan) values ('acct_u', 'u', 'pro')`;
  const created = new Date('2026-11-29T19:00:00.123Z');
  const expires = new Date('2026-12-06T19:00:00.456Z');
  const rows: ConversionRow[] = AWKWARD.map((name, i) => ({
    id: `conv_u${i}`, account_id: 'acct_u', name, endpoint: i % 2 ? null : `/v1/convert/${i}`, operation: 'parse',
    status: 'completed', async_reason: i % 3 ? null : 'respond_async',
    options: { formats: ['markdown'], note: name }, metadata: i % 2 ? null : { tag: name, n: i },
    store: i % 2 === 0, credits_reserved: i, credits_charged: 0, created_at: created,
    completed_at: i % 2 ? null : created, expires_at: i % 4 ? expires : null,
  }));
  await insertConversions(db.sql, rows);
  const files: NewFile[] = AWKWARD.map((content, i) => ({
    id: `file_u${i}`, position: i, role: i % 2 ? 'output' : 'source', sourceId: i % 2 ? `file_u${i - 1}` : undefined,
    name: `${content}.md`, mime: 'text/markdown', status: i % 2 ? undefined : 'completed', format: i % 2 ? 'markdown' : undefined,
    bytes: i === 0 ? 2 ** 40 : i, pages: i % 3 ? null : i, credits: i % 2 ? null : 1, content: i === 3 ? null : content,
    blob: i % 2 ? null : `blob-${i}`, error: i % 5 ? null : { type: 'about:blank', title: content, status: 422 } as unknown as NewFile['error'],
    fetched: i === 4 ? { url: 'https://example.com/a?b="c"', kind: 'html' } : null,
  }));
  await insertFiles(db.sql, files.map((file, i) => ({ conv: { id: `conv_u${i}`, accountId: 'acct_u', expiresAt: i % 4 ? expires : null }, file })));

  const convs = await db.sql`select * from conversions where account_id = 'acct_u' order by credits_reserved`;
  t.same(convs.map((r) => r.name), AWKWARD, 'names stored as given');
  t.same(convs.map((r) => r.options), rows.map((r) => r.options), 'options (jsonb) as given');
  t.same(convs.map((r) => r.metadata), rows.map((r) => r.metadata), 'metadata: objects as given, NULL as NULL');
  t.same(convs.map((r) => r.endpoint), rows.map((r) => r.endpoint), 'nullable text');
  t.same(convs.map((r) => r.async_reason), rows.map((r) => r.async_reason), 'async reasons');
  t.same(convs.map((r) => [r.operation, r.status]), rows.map((r) => [r.operation, r.status]), 'operation and status');
  t.same(convs.map((r) => [r.credits_reserved, r.credits_charged]), rows.map((r) => [r.credits_reserved, r.credits_charged]), 'integers');
  t.same(convs.map((r) => r.store), rows.map((r) => r.store), 'booleans');
  const iso = (d: unknown) => (d as Date | null)?.toISOString() ?? null;
  t.same(convs.map((r) => [iso(r.created_at), iso(r.completed_at), iso(r.expires_at)]),
    rows.map((r) => [iso(r.created_at), iso(r.completed_at), iso(r.expires_at)]), 'timestamps to the millisecond, NULL as NULL');

  const stored = await db.sql`select * from files where account_id = 'acct_u' order by position`;
  t.same(stored.map((r) => r.content), files.map((f) => f.content ?? null), 'contents stored exactly, "null" a string, NULL as NULL');
  t.same(stored.map((r) => r.name), files.map((f) => f.name), 'file names');
  t.same(stored.map((r) => r.source_id), files.map((f) => f.sourceId ?? null), 'source ids');
  t.same(stored.map((r) => Number(r.bytes)), files.map((f) => f.bytes), 'bytes (bigint) beyond 32 bits');
  t.same(stored.map((r) => r.pages), files.map((f) => f.pages ?? null), 'pages');
  t.same(stored.map((r) => r.error), files.map((f) => f.error ?? null), 'errors (jsonb)');
  t.same(stored.map((r) => [r.fetched_from, r.fetched_kind]), files.map((f) => [f.fetched?.url ?? null, f.fetched?.kind ?? null]), 'fetched sources');
  t.same(stored.map((r) => [r.conversion_id, r.position, r.role, r.mime, r.status, r.format, r.variant, r.credits, r.blob]),
    files.map((f, i) => [`conv_u${i}`, f.position, f.role, f.mime, f.status ?? null, f.format ?? null, f.variant ?? null, f.credits ?? null, f.blob ?? null]),
    'the other columns');
  t.same(stored.map((r) => iso(r.expires_at)),
    files.map((_, i) => (i % 4 ? expires.toISOString() : null)), 'expiry from the conversion');
}

/** Batches of every size around the content places' powers of two (insertFiles): exactly the
 *  rows given, each with its own content, none from the places past them. */
async function batchSizes(t: Test, db: Db): Promise<void> {
  await db.sql`insert into accounts (id, name, plan) values ('acct_s', 's', 'pro')`;
  await insertConversions(db.sql, [{
    id: 'conv_s', account_id: 'acct_s', name: 's', endpoint: null, operation: 'parse', status: 'completed', async_reason: null,
    options: {}, metadata: null, store: true, credits_reserved: 0, credits_charged: 0, created_at: new Date(), completed_at: null, expires_at: null,
  }]);
  let position = 0;
  for (const size of [1, 7, 8, 9, 16, 17, 40]) {
    const files: NewFile[] = Array.from({ length: size }, (_, i) => ({
      id: `file_s${size}_${i}`, position: position++, role: 'output', name: 'o.md', mime: 'text/markdown', bytes: 1,
      content: i % 5 === 4 ? null : `content ${size}/${i} "q" \\ {,}`,
    }));
    await insertFiles(db.sql, files.map((file) => ({ conv: { id: 'conv_s', accountId: 'acct_s', expiresAt: null }, file })));
    const stored = await db.sql`select id, content from files where id like ${`file_s${size}\_%`} order by position`;
    t.same(stored.map((r) => [r.id, r.content]), files.map((f) => [f.id, f.content]), `${size} rows, each with its content`);
  }
  const [n] = await db.sql`select count(*)::int as n from files where conversion_id = 'conv_s'`;
  t.equal(n!.n, 98, 'no row from the places past the rows');
}

t.test('on Postgres', async (t) => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-columns-'));
  const db = await openDb({ databaseUrl: PG_URL, schema, dataDir, max: 2 });
  t.teardown(async () => { await db.close(); await dropSchema(schema); rmSync(dataDir, { recursive: true, force: true }); });
  await roundTrip(t, db);
  await batchSizes(t, db);
});

t.test('on the embedded database', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-columns-embedded-'));
  await seedEmbedded(dataDir);
  const db = await openDb({ dataDir });
  t.teardown(async () => { await db.close(); rmSync(dataDir, { recursive: true, force: true }); });
  await roundTrip(t, db);
  await batchSizes(t, db);
});
