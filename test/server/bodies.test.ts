import t from 'tap';
import net from 'node:net';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { startWorld } from '../helpers/world.js';
import { InlineExecutor } from '../../src/jobs/executor.js';

const MB = 1000 * 1000;

/** Sends a raw HTTP request; `write` gets the socket to stream the body. */
function rawRequest(port: number, head: string, write: (s: net.Socket) => Promise<void>): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    // Nothing here may hang the suite: a stalled exchange ends the socket and fails the checks.
    s.setTimeout(30_000, () => s.destroy());
    let data = '';
    s.on('data', (d) => { data += d.toString('latin1'); });
    s.on('close', () => resolve(data));
    // The server may close while we still write (EPIPE/ECONNRESET): what it said is in `data`.
    s.on('error', () => {});
    void reject;
    s.on('connect', () => {
      s.write(head);
      write(s).catch(() => {});
    });
  });
}

function writeAsync(s: net.Socket, buf: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    if (s.destroyed) return reject(new Error('closed'));
    if (s.write(buf)) resolve();
    else {
      const closed = (): void => reject(new Error('closed'));
      s.once('close', closed);
      s.once('drain', () => { s.off('close', closed); resolve(); });
    }
  });
}

t.test('request bodies', async (t) => {
  // Converting in-thread: pool threads starting up would move RSS by more than the body path.
  const w = await startWorld('postgres', {}, { executor: new InlineExecutor({ tmpDir: os.tmpdir(), allowPrivateNetwork: false }) });
  t.teardown(() => w.close());
  const tmp = path.join(w.dataDir, 'tmp');
  const port = w.app.port;
  const auth = `x-api-key: ${w.key}\r\n`;

  await t.test('a declared oversized body is refused with 413 before it is read', async (t) => {
    const res = await rawRequest(port, `POST /v1/convert/text HTTP/1.1\r\nhost: x\r\n${auth}content-type: multipart/form-data; boundary=b\r\ncontent-length: ${150 * MB}\r\n\r\n`, async () => {});
    t.match(res, /^HTTP\/1\.1 413/);
    t.match(res, /payload_too_large/);
  });

  await t.test('a chunked body that grows past 100 MB gets 413 without the process holding it', async (t) => {
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 20);
    const chunk = Buffer.alloc(MB, 0x61);
    const res = await rawRequest(port, `POST /v1/convert/text HTTP/1.1\r\nhost: x\r\n${auth}content-type: multipart/form-data; boundary=bnd\r\ntransfer-encoding: chunked\r\n\r\n`, async (s) => {
      const part = Buffer.from('--bnd\r\ncontent-disposition: form-data; name="file"; filename="big.txt"\r\ncontent-type: text/plain\r\n\r\n');
      await writeAsync(s, Buffer.from(`${part.length.toString(16)}\r\n`));
      await writeAsync(s, part);
      await writeAsync(s, Buffer.from('\r\n'));
      for (let i = 0; i < 130; i++) {
        await writeAsync(s, Buffer.from(`${chunk.length.toString(16)}\r\n`));
        await writeAsync(s, chunk);
        await writeAsync(s, Buffer.from('\r\n'));
      }
    });
    clearInterval(timer);
    // The server answers 413 and closes. When the kernel resets a connection that still has
    // unread bytes, the client can lose that answer: then the reset itself is the refusal.
    if (res !== '') {
      t.match(res, /^HTTP\/1\.1 413/);
      t.match(res, /payload_too_large/);
    } else t.pass('the connection was cut (reset before the 413 could be read)');
    const grew = (peak - before) / MB;
    t.ok(grew < 64, `RSS grew by ${grew.toFixed(1)} MB while 100+ MB streamed through`);
    await new Promise((r) => setTimeout(r, 200));
    t.same(readdirSync(tmp), [], 'the partial temp file is gone');
  });

  await t.test('a JSON body over its cap is 413', async (t) => {
    const big = JSON.stringify({ text: 'x'.repeat(21 * MB) });
    const res = await w.req('POST', '/v1/convert/text', { body: big, headers: { 'content-type': 'application/json' } });
    t.equal(res.status, 413);
    t.equal((await res.json() as { error: string }).error, 'payload_too_large');
  });

  await t.test('JSON nested deeper than the limit is refused early', async (t) => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const res = await w.req('POST', '/v1/convert/text', { body: `{"text":"a","metadata":${deep}}`, headers: { 'content-type': 'application/json' } });
    t.equal(res.status, 400);
    t.match((await res.json() as { detail: string }).detail, /nesting/);
  });

  await t.test('a client that aborts mid-upload leaves no temp file', async (t) => {
    for (let round = 0; round < 5; round++) {
      await new Promise<void>((resolve) => {
        const s = net.connect(port, '127.0.0.1', async () => {
          s.setTimeout(10_000, () => s.destroy());
          s.write(`POST /v1/convert/text HTTP/1.1\r\nhost: x\r\n${auth}content-type: multipart/form-data; boundary=bnd\r\ncontent-length: ${50 * MB}\r\n\r\n`);
          s.write('--bnd\r\ncontent-disposition: form-data; name="file"; filename="a.txt"\r\n\r\n');
          for (let i = 0; i < 5; i++) await writeAsync(s, Buffer.alloc(MB, 0x62)).catch(() => {});
          s.destroy();
          resolve();
        });
      });
    }
    let left: string[] = [];
    for (let i = 0; i < 40; i++) {
      await new Promise((r) => setTimeout(r, 50));
      left = readdirSync(tmp);
      if (left.length === 0) break;
    }
    t.same(left, [], 'DATA_DIR/tmp is empty');
  });

  await t.test('a file is sniffed by its first bytes as they arrived, across the pieces they came in', async (t) => {
    // Text with a NUL 5,000 bytes in is not text (415); without it, it converts. The body is
    // sent in pieces of 1,000 bytes a moment apart: the first bytes kept while the file streams
    // to disk must hold every piece up to the sniff's 8 KiB, not the first one alone.
    const send = async (file: Buffer): Promise<string> => {
      const part = Buffer.from('--pieces\r\ncontent-disposition: form-data; name="file"; filename="notes.txt"\r\ncontent-type: text/plain\r\n\r\n');
      const body = Buffer.concat([part, file, Buffer.from('\r\n--pieces--\r\n')]);
      return rawRequest(port, `POST /v1/convert/text HTTP/1.1\r\nhost: x\r\n${auth}connection: close\r\ncontent-type: multipart/form-data; boundary=pieces\r\ncontent-length: ${body.length}\r\n\r\n`, async (s) => {
        for (let at = 0; at < body.length; at += 1000) {
          await writeAsync(s, body.subarray(at, at + 1000));
          await new Promise((r) => setTimeout(r, 20));
        }
      });
    };
    const text = Buffer.alloc(6000, 0x61);
    const binary = Buffer.from(text);
    binary[5000] = 0;
    const refused = await send(binary);
    t.match(refused, /^HTTP\/1\.1 415/, 'the NUL past the first pieces is seen');
    t.match(refused, /input_format_mismatch/);
    const converted = await send(text);
    t.match(converted, /^HTTP\/1\.1 200/);
    t.match(converted, /a{6000}/, 'and the text converts whole');
  });

  await t.test('the server keeps serving after all that', async (t) => {
    const res = await w.req('POST', '/v1/convert/text', { json: { text: 'still here' } });
    t.equal(res.status, 200);
  });
});
