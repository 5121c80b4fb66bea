// The copies a BodyReader makes of uWS's chunks are garbage once their reader is done with them;
// the reader has V8 collect them as the body goes (every 8 MB copied), so a large body never has
// more than a few MB of them waiting in memory. Measured on a bare uWS app in this process: the
// memory of every ArrayBuffer this process holds (process.memoryUsage().arrayBuffers), at each
// chunk, while 96 MB arrive and are dropped. Without the collections it rose by tens of MB.
import t from 'tap';
import net from 'node:net';
import { loadUws } from '../../src/server/uws.js';
import { listenBare } from '../helpers/bare-uws.js';
import { makeCtx, reply } from '../../src/server/respond.js';

const MB = 1024 * 1024;
const BODY_BYTES = 96 * MB;

t.test('a large body\'s chunk copies are collected as it arrives', async (t) => {
  const uws = loadUws();
  // The client's bytes, made before the baseline: the socket writes from this one buffer.
  const payload = Buffer.alloc(BODY_BYTES, 0x61);
  let base = 0;
  let peak = 0;
  let received = 0;
  let chunks = 0;
  const app = uws.App();
  app.post('/up', (res, req) => {
    const ctx = makeCtx(res, req);
    base = process.memoryUsage().arrayBuffers;
    ctx.body!.consume((chunk, isLast) => {
      received += chunk.length;
      chunks++;
      peak = Math.max(peak, process.memoryUsage().arrayBuffers - base);
      if (isLast) reply(ctx, 200, String(received), 'text/plain');
    });
  });
  const port = await listenBare(t, app);

  const answer = await new Promise<string>((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let data = '';
    s.on('error', reject);
    s.on('data', (d: Buffer) => {
      data += d.toString('latin1');
      if (/\r\n\r\n\d+$/.test(data) && data.endsWith(String(BODY_BYTES))) { s.destroy(); resolve(data); }
    });
    s.on('connect', () => {
      s.write(`POST /up HTTP/1.1\r\nhost: x\r\ncontent-length: ${BODY_BYTES}\r\n\r\n`);
      s.write(payload);
    });
  });
  t.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
  t.equal(received, BODY_BYTES, `the whole body arrived, in ${chunks} chunks`);
  t.ok(chunks > 100, 'in many chunks, each copied');
  t.ok(peak <= 24 * MB, `at most ${(peak / MB).toFixed(1)} MB of ArrayBuffers more than before it at any chunk (≤ 24 MB)`);
});
