// Parts sent at the size their number has in the upload's layout are written straight into the
// upload's one data file, and completing such an upload takes that file as it is (the assembled
// blob is the same inode: no second copy of the bytes). Everything else (a re-sent part, a body
// without Content-Length) goes to a file of its own and completion copies.
import t from 'tap';
import http from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { storeModes, startWorld, type World } from '../helpers/world.js';

const MiB = 1024 * 1024;

interface UploadJ { id: string; status: string; bytes: number; part_size: number; part_count: number; parts: Array<{ number: number; etag: string; bytes: number }> }

const md5 = (b: Buffer): string => createHash('md5').update(b).digest('hex');

/** PUTs one part; `chunked` sends it without a Content-Length. */
function put(w: World, id: string, n: number, body: Buffer, chunked = false): Promise<{ status: number; etag: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'x-api-key': w.key, 'content-type': 'application/octet-stream' };
    headers[chunked ? 'transfer-encoding' : 'content-length'] = chunked ? 'chunked' : String(body.length);
    const req = http.request(`${w.url}/v1/uploads/${id}/parts/${n}`, { method: 'PUT', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode!, etag: (JSON.parse(text) as { etag?: string }).etag ?? '' }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Sends the first `sent` bytes of a part that says it has `declared`, then drops the connection. */
function dropMidPart(w: World, id: string, n: number, declared: number, sent: number): Promise<void> {
  return new Promise((resolve) => {
    const req = http.request(`${w.url}/v1/uploads/${id}/parts/${n}`, {
      method: 'PUT', headers: { 'x-api-key': w.key, 'content-length': String(declared) },
    });
    req.on('error', () => resolve());
    req.write(Buffer.alloc(sent, 7), () => setTimeout(() => { req.destroy(); resolve(); }, 50));
  });
}

for (const mode of storeModes()) {
  t.test(`upload parts in their places (${mode})`, async (t) => {
    // A 5 MiB edge cap makes part_size 5 MiB, so a 12 MiB upload has parts of 5, 5 and 2 MiB.
    const w = await startWorld(mode, { SWEEP_INTERVAL_S: '0', MAX_BODY_BYTES: String(5 * MiB) });
    t.teardown(() => w.close());
    const blobsDir = path.join(w.dataDir, 'blobs');
    const total = 12 * MiB;
    const content = randomBytes(total);
    const partOf = (n: number): Buffer => content.subarray((n - 1) * 5 * MiB, Math.min(n * 5 * MiB, total));

    const create = async (): Promise<UploadJ> => {
      const res = await w.req('POST', '/v1/uploads', { json: { bytes: total, name: 'big.bin' } });
      t.equal(res.status, 201);
      const u = await res.json() as UploadJ;
      t.equal(u.part_size, 5 * MiB);
      t.equal(u.part_count, 3);
      return u;
    };
    /** The upload's claimed places, once they come to `n` (the server ends a dropped request
     *  after the client has gone), or as they are after a second. */
    const claimsComeTo = async (u: UploadJ, n: number): Promise<number> => {
      let claims = -1;
      for (let i = 0; i < 40 && claims !== n; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 25));
        claims = (await w.db.sql`select count(*)::int as n from upload_slots where upload_id = ${u.id}`)[0]!.n as number;
      }
      return claims;
    };
    const partsDir = (u: UploadJ): string => path.join(blobsDir, w.accountId, `${u.id}.parts`);
    const complete = async (u: UploadJ, etags: Map<number, string>) => {
      const res = await w.req('POST', `/v1/uploads/${u.id}/complete`, {
        json: { parts: [...etags].map(([number, etag]) => ({ number, etag })) },
      });
      t.equal(res.status, 200, 'completed');
      const [row] = await w.db.sql`select blob from uploads where id = ${u.id}`;
      return path.join(blobsDir, row!.blob as string);
    };

    await t.test('parts of their layout size, in any order, are written in place and completed without a copy', async (t) => {
      const u = await create();
      const etags = new Map<number, string>();
      for (const n of [3, 1, 2]) {
        const r = await put(w, u.id, n, partOf(n));
        t.equal(r.status, 200, `part ${n}`);
        t.equal(r.etag, `"${md5(partOf(n))}"`, `part ${n}: its MD5`);
        etags.set(n, r.etag);
      }
      t.same(readdirSync(partsDir(u)), ['data'], 'one data file, no file per part');
      const rows = await w.db.sql`select number, blob from upload_parts where upload_id = ${u.id} order by number`;
      t.same(rows.map((r) => r.blob), [1, 2, 3].map(() => `${w.accountId}/${u.id}.parts/data`), 'every row names the data file');
      const data = statSync(path.join(partsDir(u), 'data'));
      t.equal(data.size, total);

      const stored = await complete(u, new Map([...etags].sort((a, b) => a[0] - b[0])));
      t.ok(readFileSync(stored).equals(content), 'the completed file is the parts in order');
      t.equal(statSync(stored).ino, data.ino, 'the completed file is the data file itself, not a copy');
      t.notOk(existsSync(partsDir(u)), 'the parts directory is gone');
      t.same(readdirSync(path.join(w.dataDir, 'tmp')), [], 'nothing left in tmp');
    });

    await t.test('a re-sent part goes to a file of its own and replaces the one in place', async (t) => {
      const u = await create();
      const etags = new Map<number, string>();
      for (const n of [1, 2, 3]) etags.set(n, (await put(w, u.id, n, partOf(n))).etag);
      const wrong = Buffer.alloc(5 * MiB, 0x41);
      t.equal((await put(w, u.id, 2, wrong)).status, 200, 'a re-send of part 2 with other bytes');
      const right = await put(w, u.id, 2, partOf(2));
      t.equal(right.status, 200, 'and again with the right ones');
      etags.set(2, right.etag);
      const [row] = await w.db.sql`select blob from upload_parts where upload_id = ${u.id} and number = 2`;
      t.match(row!.blob, new RegExp(`^${w.accountId}/${u.id}\\.parts/2\\.[0-9a-f]+$`), 'part 2 is a file of its own');
      t.equal(readdirSync(partsDir(u)).filter((f) => f.startsWith('2.')).length, 1, 'the replaced re-send was removed');

      const data = statSync(path.join(partsDir(u), 'data'));
      const stored = await complete(u, etags);
      t.ok(readFileSync(stored).equals(content), 'parts 1 and 3 read from their places, part 2 from its own file');
      t.not(statSync(stored).ino, data.ino, 'assembled by copying');
    });

    await t.test('a part sent without Content-Length is a file of its own; the others are read from their places', async (t) => {
      const u = await create();
      const etags = new Map<number, string>();
      etags.set(1, (await put(w, u.id, 1, partOf(1))).etag);
      etags.set(2, (await put(w, u.id, 2, partOf(2), true)).etag);
      etags.set(3, (await put(w, u.id, 3, partOf(3))).etag);
      const rows = await w.db.sql`select number, blob from upload_parts where upload_id = ${u.id} order by number`;
      t.same(rows.map((r) => String(r.blob).endsWith('.parts/data')), [true, false, true]);
      const stored = await complete(u, etags);
      t.ok(readFileSync(stored).equals(content), 'the completed file is the parts in order');
    });

    await t.test('a part the client dropped gives its place back: the re-send is written there', async (t) => {
      const u = await create();
      await dropMidPart(w, u.id, 2, 5 * MiB, 2 * MiB);
      t.equal(await claimsComeTo(u, 0), 0, 'the place of part 2 is free again');
      t.same((await (await w.req('GET', `/v1/uploads/${u.id}`)).json() as UploadJ).parts, [], 'no part recorded');
      t.notOk(existsSync(path.join(partsDir(u), 'data')), 'and the file it began is gone: no claim was left on it');
      const etags = new Map<number, string>();
      etags.set(1, (await put(w, u.id, 1, partOf(1))).etag);
      await dropMidPart(w, u.id, 2, 5 * MiB, 2 * MiB);
      t.equal(await claimsComeTo(u, 1), 1, 'only part 1 holds its place');
      t.ok(existsSync(path.join(partsDir(u), 'data')), 'a drop beside a part in place leaves the file to that part');
      for (const n of [2, 3]) etags.set(n, (await put(w, u.id, n, partOf(n))).etag);
      t.same(readdirSync(partsDir(u)), ['data'], 'all three in place');
      const data = statSync(path.join(partsDir(u), 'data'));
      const stored = await complete(u, etags);
      t.ok(readFileSync(stored).equals(content), 'the re-sent part overwrote what the dropped one left');
      t.equal(statSync(stored).ino, data.ino, 'completed without a copy');
    });

    await t.test('parts sent at once to the same number: one in place, the other in a file of its own, the last recorded wins', async (t) => {
      const u = await create();
      const other = Buffer.alloc(5 * MiB, 0x42);
      const [a, b] = await Promise.all([put(w, u.id, 1, partOf(1)), put(w, u.id, 1, other)]);
      t.equal(a.status, 200);
      t.equal(b.status, 200);
      const [row] = await w.db.sql`select etag, blob from upload_parts where upload_id = ${u.id} and number = 1`;
      const files = readdirSync(partsDir(u)).filter((f) => f.startsWith('1.'));
      if (String(row!.blob).endsWith('.parts/data')) t.same(files, [], 'in place recorded last: the other\'s file removed');
      else t.same(files.map((f) => `${w.accountId}/${u.id}.parts/${f}`), [row!.blob], 'the file of its own recorded last');
      t.ok(row!.etag === a.etag || row!.etag === b.etag, 'the row holds one of the two');
      const kept = row!.etag === a.etag ? partOf(1) : other;
      const etags = new Map([[1, row!.etag as string], [2, (await put(w, u.id, 2, partOf(2))).etag], [3, (await put(w, u.id, 3, partOf(3))).etag]]);
      const stored = await complete(u, etags);
      t.ok(readFileSync(stored).subarray(0, 5 * MiB).equals(kept), 'part 1 is the recorded one, whole');
    });

    await t.test('a part whose size is not its layout size goes to a file of its own', async (t) => {
      const res = await w.req('POST', '/v1/uploads', { json: { bytes: 11, name: 'notes.txt' } });
      const u = await res.json() as UploadJ;
      const e1 = (await put(w, u.id, 1, Buffer.from('hello '))).etag;
      const e2 = (await put(w, u.id, 2, Buffer.from('world'))).etag;
      t.notOk(existsSync(path.join(partsDir(u), 'data')), 'no data file');
      const stored = await complete(u, new Map([[1, e1], [2, e2]]));
      t.equal(readFileSync(stored, 'utf8'), 'hello world');
    });
  });
}
