// reply() under backpressure, on a bare uWS app with one route that answers a large body: a
// client that reads slowly gets every byte (the offsets are bytes, not characters), the request
// finishes only once uWS has taken the whole body, and a client that leaves mid-answer ends it.
import t from 'tap';
import net from 'node:net';
import { loadUws } from '../../src/server/uws.js';
import { listenBare } from '../helpers/bare-uws.js';
import { makeCtx, reply, type Ctx } from '../../src/server/respond.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** ~16 MB of lines with two- and three-byte characters, each line different. */
function bigBody(): string {
  const lines: string[] = [];
  for (let i = 0; i < 400_000; i++) lines.push(`ligne ${String(i).padStart(7, '0')} — déjà vu, 5 € the piece\n`);
  return lines.join('');
}

t.test('reply under backpressure', async (t) => {
  const uws = loadUws();
  const body = bigBody();
  const bytes = Buffer.from(body);
  t.ok(bytes.length > 15_000_000 && bytes.length > body.length, `${bytes.length} bytes, more than its ${body.length} characters`);
  const done: Ctx[] = [];
  const app = uws.App();
  app.get('/big', (res, req) => {
    const ctx = makeCtx(res, req);
    ctx.onDone = (c) => done.push(c);
    reply(ctx, 200, body, 'text/plain; charset=utf-8');
  });
  const port = await listenBare(t, app);

  const connect = async (): Promise<net.Socket> => {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    await new Promise<void>((r) => s.on('connect', () => r()));
    return s;
  };

  await t.test('a client reading slower than the socket takes it gets every byte, and the request ends after the last', async (t) => {
    done.length = 0;
    const s = await connect();
    const chunks: Buffer[] = [];
    let received = 0;
    let headLength = -1;
    s.on('data', (d: Buffer) => {
      chunks.push(d);
      received += d.length;
      if (headLength < 0) {
        const i = Buffer.concat(chunks).indexOf('\r\n\r\n');
        if (i >= 0) headLength = i + 4;
      }
    });
    s.pause();
    s.write('GET /big HTTP/1.1\r\nhost: x\r\n\r\n');
    await sleep(500);
    t.equal(done.length, 0, 'while the client does not read, the body is not all taken and the request goes on');
    // Read in bursts of 1.5 MB with a pause after each, until the whole answer is in.
    const complete = (): boolean => headLength >= 0 && received - headLength >= bytes.length;
    const deadline = performance.now() + 30_000;
    let bursts = 0;
    while (!complete() && performance.now() < deadline) {
      const goal = received + 1_500_000;
      bursts++;
      s.resume();
      while (!complete() && received < goal && performance.now() < deadline) await sleep(5);
      s.pause();
      await sleep(150);
    }
    const all = Buffer.concat(chunks);
    const head = all.subarray(0, headLength).toString('latin1');
    t.match(head, /^HTTP\/1\.1 200 OK\r\n/);
    t.match(head, new RegExp(`\\r\\ncontent-length: ${bytes.length}(\\r\\n|$)`, 'i'));
    t.ok(bursts >= 3, `read in ${bursts} bursts`);
    t.ok(all.subarray(headLength).equals(bytes), 'byte for byte the body');
    for (let i = 0; i < 200 && done.length === 0; i++) await sleep(50);
    t.equal(done.length, 1, 'the request finished once');
    t.equal(done[0]?.status, 200);
    t.equal(done[0]?.aborted, false);
    s.destroy();
  });

  await t.test('a client that leaves mid-answer ends the request as aborted', async (t) => {
    done.length = 0;
    const s = await connect();
    s.pause();
    s.write('GET /big HTTP/1.1\r\nhost: x\r\n\r\n');
    await sleep(300);
    t.equal(done.length, 0, 'the answer is still being sent');
    s.destroy();
    for (let i = 0; i < 200 && done.length === 0; i++) await sleep(50);
    t.equal(done.length, 1, 'the request finished once');
    t.equal(done[0]?.aborted, true);
  });
});
