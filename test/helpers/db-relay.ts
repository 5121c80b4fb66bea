// A database in a schema of its own on the machine's Postgres, reached through a relay the
// test can cut (test/helpers/relay.ts). At the test's end the relay is restored and closed, the
// database closed, the schema dropped and the data directory removed.
import type { Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDb, type Db } from '../../src/store/db.js';
import { startRelay, type Relay } from './relay.js';
import { dropSchema, PG_URL } from './world.js';

export async function dbBehindRelay(t: Test, max = 4): Promise<{ db: Db; relay: Relay }> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-relayed-'));
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const relay = await startRelay(Number(new URL(PG_URL).port || 5432));
  const url = new URL(PG_URL);
  url.port = String(relay.port);
  const db = await openDb({ databaseUrl: url.toString(), dataDir, schema, max });
  t.teardown(async () => {
    await relay.restore();
    await db.close();
    await relay.close();
    await dropSchema(schema);
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { db, relay };
}
