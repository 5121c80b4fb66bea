import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { PG_URL, startWorld, storeModes, type World } from '../helpers/world.js';
import { Sweeper } from '../../src/uploads/sweeper.js';
import { createLogger } from '../../src/log.js';
import { openDb } from '../../src/store/db.js';
import { newId } from '../../src/store/ids.js';

const silent = createLogger('silent');

interface Made { id: string; blobs: string[]; fileIds: string[] }

/** A conversion with one source and one output, both as blobs on disk, in the given state. */
async function makeConversion(w: World, o: { status: string; expired: boolean; store?: boolean }): Promise<Made> {
  const id = newId('conv');
  const blobs = w.app.deps.blobs;
  const fileIds = [newId('file'), newId('file')];
  const names = fileIds.map((f) => blobs.nameFor(w.accountId, f));
  for (const n of names) await blobs.write(n, `bytes of ${n}`);
  const expires = o.store ? null : new Date(Date.now() + (o.expired ? -60_000 : 3_600_000));
  await w.db.sql`insert into conversions (id, account_id, name, operation, status, store, created_at, expires_at)
                 values (${id}, ${w.accountId}, 'text', 'parse', ${o.status}, ${o.store ?? false}, now(), ${expires})`;
  for (let i = 0; i < 2; i++) {
    await w.db.sql`insert into files (id, conversion_id, account_id, position, role, name, mime, status, bytes, blob, expires_at)
                   values (${fileIds[i]!}, ${id}, ${w.accountId}, ${i}, ${i === 0 ? 'source' : 'output'}, 'f.txt', 'text/plain',
                           ${o.status === 'running' ? 'running' : 'completed'}, 10, ${names[i]!}, ${expires})`;
  }
  return { id, blobs: names.map((n) => blobs.pathOf(n)), fileIds };
}

async function exists(w: World, m: Made): Promise<{ row: boolean; files: number; blobs: boolean[] }> {
  const [c] = await w.db.sql`select count(*)::int as n from conversions where id = ${m.id}`;
  const [f] = await w.db.sql`select count(*)::int as n from files where conversion_id = ${m.id}`;
  return { row: c!.n === 1, files: f!.n as number, blobs: m.blobs.map((b) => existsSync(b)) };
}

for (const mode of storeModes()) {
  t.test(`retention sweeper (${mode})`, async (t) => {
    const w = await startWorld(mode, { SWEEP_INTERVAL_S: '0' });
    t.teardown(() => w.close());
    const blobs = w.app.deps.blobs;
    const sweeper = new Sweeper(w.db.sql, blobs, silent, { intervalS: 0, batch: 3 });

    await t.test('expired conversions lose rows and blobs; running, stored and live ones stay', async (t) => {
      const expired = await Promise.all([1, 2, 3, 4].map(() => makeConversion(w, { status: 'completed', expired: true })));
      const failed = await makeConversion(w, { status: 'failed', expired: true });
      const running = await makeConversion(w, { status: 'running', expired: true });
      const queued = await makeConversion(w, { status: 'queued', expired: true });
      const stored = await makeConversion(w, { status: 'completed', expired: false, store: true });
      const live = await makeConversion(w, { status: 'completed', expired: false });
      // A real conversion through the API, then expired.
      const api = await (await w.req('POST', '/v1/convert/text', { json: { text: 'soon gone' } })).json() as { id: string; files: Array<{ id: string }> };
      await w.db.sql`update conversions set expires_at = now() - interval '1 second' where id = ${api.id}`;

      const counts = await sweeper.sweepOnce();
      t.equal(counts.conversions, 6, 'four completed, one failed, one from the API (in batches of 3)');
      for (const m of [...expired, failed]) t.same(await exists(w, m), { row: false, files: 0, blobs: [false, false] }, `${m.id} is gone`);
      t.same(await exists(w, running), { row: true, files: 2, blobs: [true, true] }, 'a running conversion keeps everything');
      t.same(await exists(w, queued), { row: true, files: 2, blobs: [true, true] }, 'a queued conversion keeps everything');
      t.same(await exists(w, stored), { row: true, files: 2, blobs: [true, true] }, 'a stored conversion is never swept');
      t.same(await exists(w, live), { row: true, files: 2, blobs: [true, true] }, 'an unexpired conversion stays');
      t.equal(readFileSync(running.blobs[0]!, 'utf8'), `bytes of ${w.accountId}/${running.fileIds[0]}`);
      t.equal((await w.req('GET', `/v1/conversions/${api.id}`)).status, 404);
      const [tomb] = await w.db.sql`select count(*)::int as n from expired_refs where id in ${w.db.sql([...expired[0]!.fileIds, ...api.files.map((f) => f.id)])}`;
      t.equal(tomb!.n, 2 + api.files.length, 'every swept file id leaves a tombstone');

      await w.db.sql`update conversions set status = 'completed' where id = ${running.id}`;
      t.equal((await sweeper.sweepOnce()).conversions, 1, 'once finished, the expired formerly running one goes too');
      t.same(await exists(w, running), { row: false, files: 0, blobs: [false, false] });
      t.same(await exists(w, queued), { row: true, files: 2, blobs: [true, true] });
    });

    await t.test('expired uploads lose their parts, file and row; a live claim is respected', async (t) => {
      const sql = w.db.sql;
      const mk = async (status: string, expired: boolean, claimed = false): Promise<{ id: string; parts: string; blob: string }> => {
        const id = newId('upl');
        const parts = `${w.accountId}/${id}.parts`;
        await blobs.write(`${parts}/1.abc`, 'part one');
        const blob = `${w.accountId}/${id}`;
        if (status === 'completed') await blobs.write(blob, 'assembled');
        await sql`insert into uploads (id, account_id, name, bytes, part_size, part_count, status, locked_until, blob, expires_at)
                  values (${id}, ${w.accountId}, 'u.bin', 8, 8, 1, ${status}, ${claimed ? new Date(Date.now() + 60_000) : null},
                          ${status === 'completed' ? blob : null}, ${new Date(Date.now() + (expired ? -1000 : 3_600_000))})`;
        await sql`insert into upload_parts (upload_id, number, etag, bytes, blob) values (${id}, 1, '"x"', 8, ${`${parts}/1.abc`})`;
        return { id, parts: blobs.pathOf(parts), blob: blobs.pathOf(blob) };
      };
      const pending = await mk('pending', true);
      const completed = await mk('completed', true);
      const assembling = await mk('completing', true, true);
      const abandoned = await mk('completing', true, false);
      const fresh = await mk('pending', false);
      const counts = await sweeper.sweepOnce();
      t.equal(counts.uploads, 3, 'pending, completed and abandoned expired uploads');
      for (const u of [pending, completed, abandoned]) {
        const [r] = await sql`select count(*)::int as n from upload_parts where upload_id = ${u.id}`;
        t.equal(r!.n, 0);
        t.notOk(existsSync(u.parts), 'parts directory removed');
        t.notOk(existsSync(u.blob), 'no assembled file left');
      }
      const left = await sql`select id from uploads where id in ${sql([pending.id, completed.id, assembling.id, abandoned.id, fresh.id])} order by id`;
      t.same(left.map((r) => r.id).sort(), [assembling.id, fresh.id].sort());
      t.ok(existsSync(assembling.parts), 'an upload being assembled keeps its parts');
      const gone = await w.req('GET', `/v1/uploads/${completed.id}`);
      t.equal(gone.status, 410, 'a swept upload answers 410 file_expired');
    });

    await t.test('sweepers in several processes at once never delete the same row twice', { skip: mode === 'embedded' ? 'one process owns an embedded database' : false }, async (t) => {
      const many = await Promise.all(Array.from({ length: 24 }, () => makeConversion(w, { status: 'completed', expired: true })));
      const schema = (await w.db.sql`select current_schema() as s`)[0]!.s as string;
      const others = await Promise.all([1, 2].map(() => openDb({ databaseUrl: PG_URL, dataDir: w.dataDir, schema, max: 2 })));
      t.teardown(() => Promise.all(others.map((d) => d.close())));
      const sweepers = [w.db, ...others].map((d) => new Sweeper(d.sql, blobs, silent, { intervalS: 0, batch: 2 }));
      const results = await Promise.all(sweepers.map((s) => s.sweepOnce()));
      t.equal(results.reduce((a, r) => a + r.conversions, 0), 24, 'each expired conversion counted by exactly one sweeper');
      t.equal(results.reduce((a, r) => a + r.files, 0), 48);
      for (const m of many) t.same((await exists(w, m)).blobs, [false, false]);
    });

    await t.test('the server runs the sweeper on its SWEEP_INTERVAL_S timer and stops it on close', async (t) => {
      const w2 = await startWorld(mode, { SWEEP_INTERVAL_S: '1' });
      const m = await makeConversion(w2, { status: 'completed', expired: true });
      let gone = false;
      for (let i = 0; i < 200 && !gone; i++) {
        await new Promise((r) => setTimeout(r, 100));
        gone = !(await exists(w2, m)).row;
      }
      t.ok(gone, 'swept by the sweeps of the next seconds');
      t.notOk(existsSync(m.blobs[0]!));
      await w2.close();
      t.pass('close() stopped the timer and returned');
    });
  });
}
