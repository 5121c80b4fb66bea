// Inline outputs (files.content) are compressed with lz4 where the server has it (migration
// 0009): Postgres compresses every value over about 2 KB, and lz4 takes about a third of pglz's
// time. The embedded database has no lz4: there the migration leaves pglz, and stores alike.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { openDb, type Db } from '../../src/store/db.js';
import { seedEmbedded } from '../helpers/embedded-template.js';
import { dropSchema, PG_URL } from '../helpers/world.js';

/** The compression of files.content ('l' lz4, 'p' pglz, '' the server's default), and of the
 *  value stored in a row, after a large Markdown output is written and read back. */
async function stored(t: Test, db: Db): Promise<{ column: string; value: string | null; same: boolean }> {
  const markdown = Array.from({ length: 2000 }, (_, i) => `Line ${i} of a long **Markdown** output, with words that repeat.`).join('\n');
  const [{ column }] = await db.sql`select attcompression::text as column from pg_attribute
    where attrelid = 'files'::regclass and attname = 'content'` as unknown as [{ column: string }];
  await db.sql`insert into accounts (id, name, plan) values ('acct_c', 'c', 'pro')`;
  await db.sql`insert into conversions (id, account_id, name, operation, status, created_at)
    values ('conv_c', 'acct_c', 'c', 'parse', 'completed', now())`;
  await db.sql`insert into files (id, conversion_id, account_id, position, role, name, mime, content)
    values ('file_c', 'conv_c', 'acct_c', 1, 'output', 'c.md', 'text/markdown', ${markdown})`;
  const [row] = await db.sql`select content, pg_column_compression(content) as value from files where id = 'file_c'`;
  t.ok(markdown.length > 100_000, 'an output large enough to be compressed');
  return { column, value: row!.value as string | null, same: row!.content === markdown };
}

t.test('on Postgres, new outputs are stored lz4-compressed and read back whole', async (t) => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-compression-'));
  const db = await openDb({ databaseUrl: PG_URL, schema, dataDir, max: 2 });
  t.teardown(async () => { await db.close(); await dropSchema(schema); rmSync(dataDir, { recursive: true, force: true }); });
  const r = await stored(t, db);
  t.equal(r.column, 'l', 'the column compresses with lz4');
  t.equal(r.value, 'lz4', 'the stored value is lz4');
  t.ok(r.same, 'read back unchanged');
});

t.test('the embedded database, without lz4, migrates and keeps pglz', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-compression-embedded-'));
  await seedEmbedded(dataDir);
  const db = await openDb({ dataDir });
  t.teardown(async () => { await db.close(); rmSync(dataDir, { recursive: true, force: true }); });
  const r = await stored(t, db);
  t.equal(r.column, '', 'the column keeps the default');
  t.equal(r.value, 'pglz', 'the stored value is pglz');
  t.ok(r.same, 'read back unchanged');
});
