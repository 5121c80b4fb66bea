// A 1 GiB text file of one line, streamed to disk inside the test and sent as multipart: the
// server takes it to disk without holding it, and the conversion ends with a clear
// invalid_document Problem (a text document that large cannot be one Markdown string) instead
// of a crash, an out-of-memory thread or a stuck file. Runs in one world mode only: nothing
// here depends on the database.
import t from 'tap';
import { createReadStream, createWriteStream, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { Readable } from 'node:stream';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { MODES, startWorld } from '../helpers/world.js';
import { PoolExecutor } from '../../src/pool/pool.js';

const GiB = 1024 * 1024 * 1024;
const SIZE = Number(process.env.DOCPIPE_HUGE_TEXT_BYTES ?? GiB);
const TASK_LIMIT_MS = 30_000;

async function writeOneLine(file: string, bytes: number): Promise<void> {
  const out = createWriteStream(file);
  const chunk = Buffer.alloc(4 * 1024 * 1024, 'lorem ipsum dolor sit amet ');
  for (let left = bytes; left > 0; left -= chunk.length) {
    if (!out.write(left >= chunk.length ? chunk : chunk.subarray(0, left))) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** A multipart body of one `file` part, streamed from disk. */
async function* multipart(file: string): AsyncGenerator<Buffer> {
  yield Buffer.from('--HUGE\r\ncontent-disposition: form-data; name="file"; filename="one-line.txt"\r\ncontent-type: text/plain\r\n\r\n');
  for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 })) yield chunk as Buffer;
  yield Buffer.from('\r\n--HUGE--\r\n');
}

t.test(`a ${Math.round(SIZE / 1024 / 1024)} MiB one-line text file (${MODES[0]})`, async (t) => {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'docpipe-huge-'));
  const pool = new PoolExecutor({ tmpDir: scratch, allowPrivateNetwork: false }, { threads: 1, taskTimeoutMs: TASK_LIMIT_MS });
  const w = await startWorld(MODES[0]!, { SWEEP_INTERVAL_S: '0', MAX_BODY_BYTES: String(SIZE + 1024 * 1024) }, { executor: pool });
  t.teardown(async () => { await w.close(); rmSync(scratch, { recursive: true, force: true }); });

  let started = performance.now();
  const file = path.join(scratch, 'one-line.txt');
  await writeOneLine(file, SIZE);
  t.comment(`written in ${Math.round(performance.now() - started)} ms`);

  started = performance.now();
  // Sent chunked: uWS cuts any request whose Content-Length has ten digits (≥ 1e9) without an
  // answer (see clients.test.ts), so a 1 GiB multipart body must not declare its length.
  const res = await fetch(`${w.url}/v1/convert/text?wait=60`, {
    method: 'POST',
    headers: { 'x-api-key': w.key, 'content-type': 'multipart/form-data; boundary=HUGE' },
    body: Readable.toWeb(Readable.from(multipart(file))) as ReadableStream<Uint8Array>,
    duplex: 'half',
  } as RequestInit);
  const body = await res.json() as { status: string; files: Array<{ role: string; status: string; bytes: number; error: { error: string; detail: string } | null }> };
  const ms = performance.now() - started;
  t.comment(`answered ${res.status} in ${Math.round(ms)} ms`);
  t.equal(res.status, 200, 'answered inside the wait window');
  const src = body.files.find((f) => f.role === 'source')!;
  t.equal(src.bytes, SIZE, 'the whole file arrived');
  t.equal(src.status, 'failed', 'the file fails');
  t.equal(src.error?.error, 'invalid_document');
  t.match(src.error?.detail, /too large|larger than|at most/i, `a clear reason: ${src.error?.detail}`);
  t.equal(body.status, 'failed');
  t.equal(pool.busy(), 0, 'no thread is left busy');
  t.same(readdirSync(path.join(w.dataDir, 'tmp')).filter((f) => f.startsWith('up_')), [], 'no upload temp file is left');
  const ok = await w.req('POST', '/v1/convert/text', { json: { text: 'after the big one' } });
  t.equal(ok.status, 200, 'the server converts the next document');
});
