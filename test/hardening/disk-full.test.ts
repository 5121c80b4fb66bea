// The disk filling up: DATA_DIR on a tmpfs of a few MiB, filled up but for a little room. A
// multipart upload bigger than the room, a JSON submit whose inline text does not fit, and an
// upload part that does not fit must each answer 503 service_unavailable (retryable) as a
// Problem — never a 500 — and leave no partial file behind (the directories are listed); once
// space is freed the same requests succeed. Needs root to mount the tmpfs: skipped, saying so,
// where mounting is not allowed.
import t from 'tap';
import type { Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startWorld, PROBLEM_FIELDS, type World } from '../helpers/world.js';
import { checkInvariants } from '../../bench/chaos/invariants.js';

const KiB = 1024;

function mountTmpfs(dir: string, bytes: number): string | undefined {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir], { stdio: 'pipe' });
    return undefined;
  } catch (err) {
    return ((err as { stderr?: Buffer }).stderr?.toString() || (err as Error).message).trim();
  }
}

/** Every file under dir, relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath ?? e.path, e.name)));
}

const free = (dir: string): number => { const s = statfsSync(dir); return s.bavail * s.bsize; };

async function expectDiskFull(t: Test, res: Response, what: string): Promise<void> {
  const p = await res.json() as Record<string, unknown>;
  t.equal(res.status, 503, `${what}: 503`);
  t.equal(res.headers.get('content-type'), 'application/problem+json', `${what}: a Problem`);
  t.equal(p.error, 'service_unavailable', `${what}: service_unavailable`);
  t.equal(p.retryable, true, `${what}: retryable`);
  t.match(String(p.detail), /disk/, `${what}: says the disk is full`);
  for (const f of PROBLEM_FIELDS) t.ok(f in p, `${what}: Problem field ${f}`);
}


const mountPoint = mkdtempSync(path.join(os.tmpdir(), 'docpipe-diskfull-'));
const why = mountTmpfs(mountPoint, 4 * 1024 * KiB);

t.test('with the disk full, uploads, JSON submits and upload parts answer 503 and leave no partial file', { skip: why && `cannot mount a tmpfs here (${why})` }, async (t) => {
  t.teardown(() => {
    try { execFileSync('umount', ['-l', mountPoint]); } catch { /* not mounted */ }
    rmSync(mountPoint, { recursive: true, force: true });
  });
  const w: World = await startWorld('postgres', { DATA_DIR: mountPoint });
  t.teardown(() => w.close());
  const tmp = path.join(mountPoint, 'tmp');
  const blobs = path.join(mountPoint, 'blobs');
  t.equal((await w.req('POST', '/v1/convert/text', { json: { text: 'fits' } })).status, 200, 'works while there is room');

  // Fill the disk but for 64 KiB.
  const filler = path.join(mountPoint, 'filler');
  writeFileSync(filler, Buffer.alloc(Math.max(0, free(mountPoint) - 64 * KiB)));
  t.ok(free(mountPoint) <= 64 * KiB, `${free(mountPoint)} bytes left`);
  const big = 'A line of text that goes on.\n'.repeat(12_000); // ~340 KiB

  const upload = async (): Promise<Response> => {
    const form = new FormData();
    form.append('file', new Blob([big], { type: 'text/plain' }), 'big.txt');
    return w.req('POST', '/v1/convert/text', { body: form });
  };
  const json = (): Promise<Response> => w.req('POST', '/v1/convert/text', { json: { text: big } });
  const created = await (await w.req('POST', '/v1/uploads', { json: { bytes: Buffer.byteLength(big), name: 'big.txt' } })).json() as { id: string };
  const part = (): Promise<Response> => w.req('PUT', `/v1/uploads/${created.id}/parts/1`, { body: big });

  await expectDiskFull(t, await upload(), 'multipart upload');
  t.same(filesUnder(tmp), [], 'no temp file left by the upload');
  await expectDiskFull(t, await json(), 'JSON submit');
  t.same(filesUnder(tmp), [], 'no temp file left by the JSON submit');
  await expectDiskFull(t, await part(), 'upload part');
  t.same(filesUnder(tmp), [], 'no temp file left by the part');
  t.same(filesUnder(blobs).filter((f) => f.includes(created.id)), [], 'no part kept');
  const [u] = await w.db.sql`select count(*)::int as n from upload_parts where upload_id = ${created.id}`;
  t.equal(u!.n, 0, 'no part recorded');

  rmSync(filler);
  t.equal((await upload()).status, 200, 'with room again, the upload converts');
  t.equal((await json()).status, 200, 'the JSON submit converts');
  t.equal((await part()).status, 200, 'the part is kept');
  t.same(filesUnder(tmp), [], 'no temp file left');
  const [orphans] = (await checkInvariants({ sql: w.db.sql, accountIds: [w.accountId], sent: [], dataDirs: [mountPoint] }))
    .filter((c) => c.name === 'no orphan blobs');
  t.equal(orphans!.violations, 0, `every blob on disk has its row and every row its blob ${orphans!.examples.join('; ')}`);
});
