// Regression tests for what the chaos run (npm run chaos) found.
// - A process SIGKILLed mid-request or mid-conversion leaves its temp files in DATA_DIR/tmp,
//   which every process shares, and nothing removed them: the retention sweeper now removes
//   entries untouched for an hour, and leaves younger ones (a live request's) alone.
// - A process SIGKILLed while inserting a conversion left its source blob in blobs/ with no row
//   (the file was moved into place before the insert's commit). Blobs now wait in pending/
//   between their file and their row, and whatever a crash leaves there is resolved by the rows:
//   placed when the row exists (a crash after the commit), removed when not (before it). The
//   same holds for a delete cut between moving the blobs out and deleting the rows.
import t from 'tap';
import { existsSync, mkdirSync, utimesSync, writeFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { startWorld } from '../helpers/world.js';
import { Sweeper, TEMP_MAX_AGE_MS } from '../../src/uploads/sweeper.js';
import { createLogger } from '../../src/log.js';

t.test('temp files left by a killed process are swept once an hour old; live ones stay', async (t) => {
  const w = await startWorld('postgres', { SWEEP_INTERVAL_S: '0' });
  t.teardown(() => w.close());
  const tmp = w.app.deps.blobs.tmpDir;
  const old = (Date.now() - TEMP_MAX_AGE_MS - 60_000) / 1000;
  // What a killed request and a killed conversion leave: a body received half-way, a scratch dir.
  writeFileSync(path.join(tmp, 'up_left-by-a-killed-request'), 'half a body');
  mkdirSync(path.join(tmp, 'task_left-by-a-killed-conversion'));
  writeFileSync(path.join(tmp, 'task_left-by-a-killed-conversion', 'page-1.png'), 'scratch');
  utimesSync(path.join(tmp, 'up_left-by-a-killed-request'), old, old);
  utimesSync(path.join(tmp, 'task_left-by-a-killed-conversion'), old, old);
  writeFileSync(path.join(tmp, 'up_being-received-now'), 'a live body');

  const counts = await new Sweeper(w.db.sql, w.app.deps.blobs, createLogger('silent'), { intervalS: 0 }).sweepOnce();
  t.equal(counts.temp, 2, 'two stale entries removed');
  t.same(readdirSync(tmp), ['up_being-received-now'], 'the live one is still there');
});

t.test('blobs a crash left between their file and their row are resolved by the rows', async (t) => {
  const w = await startWorld('postgres', { SWEEP_INTERVAL_S: '0' });
  t.teardown(() => w.close());
  const blobs = w.app.deps.blobs;
  const service = w.app.deps.conversions;

  await t.test('killed before the insert committed: the staged source has no row and is removed', async (t) => {
    const body = path.join(blobs.tmpDir, 'up_body-of-a-killed-insert');
    writeFileSync(body, 'a document');
    const name = blobs.nameFor(w.accountId, 'file_never_committed');
    await blobs.stage(body, name);
    t.same(await service.resolvePending(60_000), { placed: 0, removed: 0 }, 'a young entry may still be committing: left alone');
    t.same(await service.resolvePending(0), { placed: 0, removed: 1 });
    t.same(readdirSync(blobs.pendingDir), [], 'pending/ is empty');
    t.notOk(existsSync(blobs.pathOf(name)), 'nothing was placed');
  });

  await t.test('killed after the commit, before the placing: the blob is placed, its conversion whole', async (t) => {
    const res = await w.req('POST', '/v1/convert/text', { json: { text: 'committed, then the process died' } });
    const c = await res.json() as { id: string; files: Array<{ id: string; role: string }> };
    const source = c.files.find((f) => f.role === 'source')!;
    const [row] = await w.db.sql`select blob from files where id = ${source.id}`;
    await blobs.unplace([row!.blob as string]); // where the crash left it
    t.same(await service.resolvePending(0), { placed: 1, removed: 0 });
    t.ok(existsSync(blobs.pathOf(row!.blob as string)), 'in place');
    const content = await w.req('GET', `/v1/conversions/${c.id}/files/${source.id}/content`);
    t.equal(await content.text(), 'committed, then the process died', 'and served');
  });

  await t.test('upload parts and assembled uploads are resolved by their rows too', async (t) => {
    const bytes = 'part of a chunked upload';
    const u = await (await w.req('POST', '/v1/uploads', { json: { bytes: bytes.length, name: 'doc.txt' } })).json() as { id: string };
    t.equal((await w.req('PUT', `/v1/uploads/${u.id}/parts/1`, { body: bytes })).status, 200);
    const [part] = await w.db.sql`select blob from upload_parts where upload_id = ${u.id}`;
    await blobs.unplace([part!.blob as string]);
    const orphan = path.join(blobs.tmpDir, 'part_of-a-killed-request');
    writeFileSync(orphan, 'never recorded');
    await blobs.stage(orphan, `${w.accountId}/${u.id}.parts/2.deadbeef`);
    t.same(await service.resolvePending(0), { placed: 1, removed: 1 }, 'the recorded part placed, the unrecorded one removed');
    t.ok(existsSync(blobs.pathOf(part!.blob as string)));
    const done = await w.req('POST', `/v1/uploads/${u.id}/complete`, { json: { parts: [{ number: 1, etag: (await (await w.req('GET', `/v1/uploads/${u.id}`)).json() as { parts: Array<{ etag: string }> }).parts[0]!.etag }] } });
    t.equal(done.status, 200, 'and the upload completes');
  });

  await t.test('a delete cut after moving the blobs out but before the rows went: the blobs go back', async (t) => {
    const res = await w.req('POST', '/v1/convert/text', { json: { text: 'delete interrupted' } });
    const c = await res.json() as { id: string };
    const [row] = await w.db.sql`select blob from files where conversion_id = ${c.id} and role = 'source'`;
    await blobs.unplace([row!.blob as string]);
    t.same(await service.resolvePending(0), { placed: 1, removed: 0 }, 'the rows are still there: placed back');
    t.equal((await w.req('DELETE', `/v1/conversions/${c.id}`)).status, 200, 'a delete later works');
    t.notOk(existsSync(blobs.pathOf(row!.blob as string)), 'and removes it');
    t.same(readdirSync(blobs.pendingDir), [], 'pending/ is empty');
  });
});
