// A committed row promises its blob's bytes. Postgres's commit waits for its own WAL only, so a
// blob must be flushed to the disk before its row's transaction: its bytes (fdatasync), then the
// directory that names it (fsync). These tests watch the flushes through Blobs.flush and read
// the database at the moment of each flush: the row is not there yet, and it is there after the
// answer. (Whether the disk keeps what fdatasync returned from is the kernel's promise; what is
// checked here is that the promise is asked for, and before the row.)
import t from 'tap';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Blobs, diskFlush, type DiskFlush } from '../../src/store/blobs.js';
import { outputFiles, outputStage } from '../../src/jobs/outputs.js';
import { ROW_CONTENT_BYTES, type PlannedSource } from '../../src/jobs/context.js';
import type { RunResult } from '../../src/converters/registry.js';
import { MODES, startWorld } from '../helpers/world.js';

type Flushed = { kind: 'file' | 'dir'; path: string; seen?: string[] };

/** Records every flush (a directory's with the names in it when its flush began), then does it. */
function recording(blobs: Blobs, before: (f: Flushed) => Promise<void> | void = () => {}): Flushed[] {
  const log: Flushed[] = [];
  const real = blobs.flush;
  blobs.flush = {
    async file(p) {
      const f: Flushed = { kind: 'file', path: p };
      log.push(f);
      await before(f);
      await real.file(p);
    },
    async dir(p) {
      const f: Flushed = { kind: 'dir', path: p, seen: readdirSync(p) };
      log.push(f);
      await before(f);
      await real.dir(p);
    },
  };
  return log;
}

function store(t: { teardown(fn: () => void): void }): Blobs {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-flush-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return new Blobs(dir);
}

t.test('staging flushes the blob, then pending/, before it resolves', async (t) => {
  const blobs = store(t);
  const log = recording(blobs);
  const body = path.join(blobs.tmpDir, 'body');
  writeFileSync(body, 'the received bytes');
  const a = await blobs.stage(body, blobs.nameFor('acct_1', 'file_a'));
  t.same(log.map((f) => [f.kind, f.path]), [['file', a.path], ['dir', blobs.pendingDir]], 'moved file: its bytes, then its name');
  t.ok(log[1]!.seen!.includes(path.basename(a.path)), 'the directory flush began after the rename');

  log.length = 0;
  const b = await blobs.stageContent(blobs.nameFor('acct_1', 'file_b'), 'written here');
  t.same(log.map((f) => [f.kind, f.path]), [['file', b.path], ['dir', blobs.pendingDir]], 'written content: the same');
  t.equal(readFileSync(b.path, 'utf8'), 'written here');
  await blobs.place([a, b]);
  t.equal(readFileSync(blobs.pathOf(a.name), 'utf8'), 'the received bytes', 'placed whole');
});

t.test('a flush that fails refuses the staging and leaves nothing in pending/', async (t) => {
  const blobs = store(t);
  const failing = (what: keyof DiskFlush): DiskFlush => ({
    ...diskFlush, [what]: async () => { throw Object.assign(new Error('I/O error'), { code: 'EIO' }); },
  });
  for (const what of ['file', 'dir'] as const) {
    blobs.flush = failing(what);
    await t.rejects(blobs.stageContent(blobs.nameFor('acct_1', `file_${what}`), 'x'), { code: 'EIO' }, `${what} flush fails`);
    const body = path.join(blobs.tmpDir, `body_${what}`);
    writeFileSync(body, 'y');
    await t.rejects(blobs.stage(body, blobs.nameFor('acct_1', `file_moved_${what}`)), { code: 'EIO' });
    t.same(readdirSync(blobs.pendingDir), [], `pending/ is empty after a failed ${what} flush`);
  }
});

t.test('stagings that wait for pending/ together share one flush begun after all their renames', async (t) => {
  const blobs = store(t);
  let release!: () => void;
  const held = new Promise<void>((r) => { release = r; });
  let dirs = 0;
  // The first directory flush waits until every staging has flushed its bytes and asked.
  const log = recording(blobs, async (f) => { if (f.kind === 'dir' && dirs++ === 0) await held; });
  const staging = Array.from({ length: 6 }, (_, i) => blobs.stageContent(blobs.nameFor('acct_1', `file_${i}`), `content ${i}`));
  for (let turns = 0; turns < 10_000 && log.filter((f) => f.kind === 'file').length < 6; turns++) await new Promise((r) => setImmediate(r));
  t.equal(log.filter((f) => f.kind === 'file').length, 6, 'every staging flushed its bytes');
  await new Promise((r) => setImmediate(r));
  release();
  const staged = await Promise.all(staging);
  const flushes = log.filter((f) => f.kind === 'dir');
  t.equal(flushes.length, 2, 'the held flush, and one shared by the five that asked while it ran');
  for (const s of staged) {
    t.ok(flushes.some((f) => f.seen!.includes(path.basename(s.path))), `${s.name} was named in pending/ when a flush began`);
  }
  // A later staging gets a flush of its own.
  await blobs.stageContent(blobs.nameFor('acct_1', 'file_later'), 'later');
  t.equal(log.filter((f) => f.kind === 'dir').length, 3);
});

t.test('a blob written in its place is flushed with every directory up to the store', async (t) => {
  const blobs = store(t);
  const log = recording(blobs);
  const name = 'acct_1/upl_1.parts/data';
  const file = blobs.pathOf(name);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, randomBytes(1000));
  await blobs.flushPlaced(name);
  t.same(log.map((f) => [f.kind, path.relative(blobs.root, f.path) || '.']),
    [['file', name], ['dir', 'acct_1/upl_1.parts'], ['dir', 'acct_1'], ['dir', '.']]);
});

t.test('the real flushes run on a file and a directory', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-flush-real-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'f'), 'bytes');
  await diskFlush.file(path.join(dir, 'f'));
  await diskFlush.dir(dir);
  await t.rejects(diskFlush.file(path.join(dir, 'missing')), { code: 'ENOENT' });
});

t.test('outputs a pool thread wrote to pending/ are flushed before their rows are made', async (t) => {
  const blobs = store(t);
  const log = recording(blobs);
  // What the pool thread does with Task.stage: it writes the large outputs to the places named.
  const places = outputStage(blobs, 'acct_1', 'file_src', 2);
  const big = 'x'.repeat(ROW_CONTENT_BYTES + 1);
  writeFileSync(places[0]!.path, big);
  const result = {
    outputs: [{ format: 'markdown', mime: 'text/markdown', content: big }, { format: 'text', mime: 'text/plain', content: big }],
    staged: [0], pageCount: 1,
  } as unknown as RunResult;
  const out = await outputFiles({ blobs }, 'acct_1', { id: 'file_src', name: 'a.pdf' } as PlannedSource, 0, result, places);
  const second = out.staged[1]!;
  t.same(log.map((f) => [f.kind, f.path]), [
    ['file', places[0]!.path], ['dir', blobs.pendingDir], // the thread's, flushed here
    ['file', second.path], ['dir', blobs.pendingDir], // the one it did not write, staged here
  ]);
  t.same(out.files.map((f) => f.blob), [places[0]!.name, second.name], 'both rows name their blobs');
});

t.test('through the API, each blob is on disk before its row is committed', async (t) => {
  const MiB = 1024 * 1024;
  // A 5 MiB edge cap makes an upload's part_size 5 MiB: a 6 MiB upload's part 2 has 1 MiB.
  const w = await startWorld(MODES[0]!, { MAX_BODY_BYTES: String(5 * MiB) });
  t.teardown(() => w.close());
  const blobs = w.app.deps.blobs;
  const rowsAtFlush = new Map<string, number>();

  await t.test('a submitted source', async (t) => {
    const log = recording(blobs, async (f) => {
      if (f.kind !== 'file' || !f.path.startsWith(blobs.pendingDir)) return;
      const entry = path.basename(f.path);
      const fileId = decodeURIComponent(entry.slice(0, entry.lastIndexOf('~'))).split('/')[1]!;
      const [row] = await w.db.sql`select count(*)::int as n from files where id = ${fileId}`;
      rowsAtFlush.set(fileId, row!.n as number);
    });
    const fd = new FormData();
    fd.append('file', new File(['a source kept as a blob'], 'notes.txt', { type: 'text/plain' }));
    const res = await w.req('POST', '/v1/convert/text', { body: fd });
    t.equal(res.status, 200);
    const conv = await res.json() as { files: Array<{ id: string; role: string }> };
    const source = conv.files.find((f) => f.role === 'source')!;
    t.equal(rowsAtFlush.get(source.id), 0, 'the source was flushed while it had no row');
    const [row] = await w.db.sql`select blob from files where id = ${source.id}`;
    t.ok(row?.blob, 'its row, committed after, names the blob');
    t.equal(readFileSync(blobs.pathOf(row!.blob as string), 'utf8'), 'a source kept as a blob');
    t.ok(log.some((f) => f.kind === 'dir' && f.path === blobs.pendingDir), 'pending/ was flushed too');
    blobs.flush = diskFlush;
  });

  await t.test('an upload part written in its place', async (t) => {
    const created = await (await w.req('POST', '/v1/uploads', { json: { bytes: 6 * MiB, name: 'big.bin' } })).json() as { id: string; part_size: number };
    t.equal(created.part_size, 5 * MiB);
    const partsAtFlush: number[] = [];
    const log = recording(blobs, async (f) => {
      if (f.kind !== 'file') return;
      const [row] = await w.db.sql`select count(*)::int as n from upload_parts where upload_id = ${created.id} and number = 2`;
      partsAtFlush.push(row!.n as number);
    });
    const res = await w.req('PUT', `/v1/uploads/${created.id}/parts/2`, {
      body: randomBytes(MiB), headers: { 'content-type': 'application/octet-stream' },
    });
    t.equal(res.status, 200);
    const data = `${w.accountId}/${created.id}.parts/data`;
    t.same(log.filter((f) => f.kind === 'file').map((f) => path.relative(blobs.root, f.path)), [data], 'the part was written in its place and flushed there');
    t.same(partsAtFlush, [0], 'while the part had no row');
    const [row] = await w.db.sql`select blob from upload_parts where upload_id = ${created.id} and number = 2`;
    t.equal(row?.blob, data, 'its row came after');
    t.same(log.filter((f) => f.kind === 'dir').map((f) => path.relative(blobs.root, f.path) || '.'),
      [`${w.accountId}/${created.id}.parts`, w.accountId, '.'], 'with the directories it was made in');
    blobs.flush = diskFlush;
  });
});
