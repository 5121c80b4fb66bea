// A multipart file streams to a temp file: whatever the pieces it arrived in, the file on disk
// holds exactly the bytes sent and its first and last bytes are kept as they went by; the
// request's end removes the temp files the handler left, and looks for them first, so that one it
// moved away (a conversion keeps its source so) costs no removal.
import t from 'tap';
import os from 'node:os';
import path from 'node:path';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { loadUws } from '../../src/server/uws.js';
import { listenBare } from '../helpers/bare-uws.js';
import { postInPieces } from '../helpers/post-in-pieces.js';
import { makeCtx, reply } from '../../src/server/respond.js';
import { readMultipart, TAIL_BYTES, type MultipartBody } from '../../src/server/body.js';
import { PEEK_BYTES } from '../../src/converters/registry.js';

const KB = 1024;

/** Bytes that differ from one position to the next, so that a lost, doubled or moved piece shows. */
function pattern(length: number, seed: number): Buffer {
  const b = Buffer.alloc(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}

function multipartBody(files: Array<{ name: string; data: Buffer }>): Buffer {
  const parts: Buffer[] = [];
  for (const f of files) {
    parts.push(Buffer.from(`--b\r\ncontent-disposition: form-data; name="file"; filename="${f.name}"\r\ncontent-type: application/octet-stream\r\n\r\n`));
    parts.push(f.data, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('--b--\r\n'));
  return Buffer.concat(parts);
}

/** The answer is whole: its headers and as many body bytes as its content-length says. */
function answered(d: string): boolean {
  const end = d.indexOf('\r\n\r\n');
  const length = end < 0 ? null : /content-length: (\d+)/i.exec(d.slice(0, end));
  return length !== null && d.length - end - 4 >= Number(length[1]);
}

interface Seen { body?: MultipartBody; onDisk: Buffer[]; error?: string }

/** Sends `body` in pieces of `piece` bytes a moment apart; the handler reads it with readMultipart
 *  into `dir`, lets `during` act on what it got, then answers (which ends the request). */
async function upload(t: { teardown(fn: () => void): void }, dir: string, body: Buffer, piece: number, during: (mp: MultipartBody) => void = () => {}): Promise<Seen> {
  const uws = loadUws();
  const seen: Seen = { onDisk: [] };
  const app = uws.App();
  app.post('/up', (res, req) => {
    const ctx = makeCtx(res, req);
    readMultipart(ctx, dir, { maxBytes: 64 * 1024 * 1024, maxFiles: 4, maxFields: 1, maxFieldBytes: 1024 })
      .then((mp) => {
        seen.body = mp;
        seen.onDisk = mp.files.map((f) => readFileSync(f.path));
        during(mp);
        reply(ctx, 200, 'ok', 'text/plain');
      }, (err: Error) => {
        seen.error = err.message;
        reply(ctx, 500, err.message, 'text/plain');
      });
  });
  const port = await listenBare(t, app);
  await postInPieces(port, '/up', body, { piece, pauseMs: 1, boundary: 'b', whole: answered });
  // the request's clean-ups run once its answer is out
  for (let i = 0; i < 100 && readdirSync(dir).length > 0; i++) await new Promise((r) => setTimeout(r, 10));
  return seen;
}

t.test('a file of over a MB sent in uneven pieces', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-upload-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const data = pattern(1280 * KB + 123, 7);
  const seen = await upload(t, dir, multipartBody([{ name: 'big.bin', data }]), 48 * 1024 + 7);
  t.equal(seen.error, undefined);
  const f = seen.body!.files[0]!;
  t.equal(f.bytes, data.length, 'every byte counted');
  t.ok(seen.onDisk[0]!.equals(data), 'the file on disk holds the bytes sent, in order');
  t.ok(f.head.equals(data.subarray(0, PEEK_BYTES)), 'its first bytes kept');
  t.ok(f.tail.equals(data.subarray(data.length - TAIL_BYTES)), 'its last bytes kept');
  t.same(readdirSync(dir), [], 'the temp file is removed when the request ends');
});

t.test('several files in one body, one of them empty', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-upload-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const files = [
    { name: 'half.bin', data: pattern(512 * KB, 1) },
    { name: 'small.bin', data: pattern(1000, 2) },
    { name: 'empty.bin', data: Buffer.alloc(0) },
    { name: 'one.bin', data: pattern(1024 * KB, 3) },
  ];
  const seen = await upload(t, dir, multipartBody(files), 64 * 1024);
  t.equal(seen.error, undefined);
  t.same(seen.body!.files.map((f) => [f.name, f.bytes]), files.map((f) => [f.name, f.data.length]));
  files.forEach((f, i) => t.ok(seen.onDisk[i]!.equals(f.data), `${f.name}: the bytes sent`));
});

t.test('a whole body in one piece', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-upload-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const data = pattern(512 * KB + 1, 9);
  const body = multipartBody([{ name: 'one.bin', data }]);
  const seen = await upload(t, dir, body, body.length);
  t.ok(seen.onDisk[0]!.equals(data));
});

t.test('a temp file the handler moved away is left alone; the one it left is removed', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-upload-'));
  const kept = mkdtempSync(path.join(os.tmpdir(), 'docpipe-kept-'));
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }); rmSync(kept, { recursive: true, force: true }); });
  const files = [{ name: 'a.bin', data: pattern(3000, 4) }, { name: 'b.bin', data: pattern(5000, 5) }];
  const seen = await upload(t, dir, multipartBody(files), 64 * 1024, (mp) => {
    renameSync(mp.files[0]!.path, path.join(kept, 'a.bin'));
  });
  t.equal(seen.error, undefined);
  t.ok(readFileSync(path.join(kept, 'a.bin')).equals(files[0]!.data), 'the moved file is intact');
  t.same(readdirSync(dir), [], 'the file left behind is removed');
  t.notOk(existsSync(seen.body!.files[1]!.path));
});
