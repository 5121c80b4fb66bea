// Hostile clients: a slowloris body (headers, then a byte every few seconds) is cut by uWS's
// idle timeout and its temp file removed; a client pipelining answers it never reads is cut as
// soon as one waits; a stalled download is cut by the send timeout and its file closed, while a
// slow reader gets all of it; 200+ connections that abort mid-upload leave no temp file and no
// open file descriptor; a 1 MB header, deeply nested JSON and a huge JSON array are refused
// early; the server keeps answering throughout. One world mode: the database plays no part in
// any of this.
import t, { type Test } from 'tap';
import net from 'node:net';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { MODES, startWorld } from '../helpers/world.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const fds = (): number => readdirSync('/proc/self/fd').length;

/** The files this process holds open. */
function openFiles(): string[] {
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try { out.push(readlinkSync(`/proc/self/fd/${fd}`)); } catch { /* closed meanwhile */ }
  }
  return out;
}

/**
 * Whether this process (the server runs in it) still holds its end of the connection whose client
 * end is on `clientPort`. A paused client cannot tell: it does not read, so it never sees the FIN.
 * In /proc/net/tcp a socket no descriptor holds (closed, its FIN queued) shows inode 0.
 */
function holdsConnection(serverPort: number, clientPort: number): boolean {
  const hex = (p: number): string => `:${p.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of readFileSync('/proc/net/tcp', 'latin1').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1]?.endsWith(hex(serverPort)) && f[2]?.endsWith(hex(clientPort)) && f[9] !== '0') return true;
  }
  return false;
}

/** Connects, sends `head`, and resolves with everything the server sent once it closes. */
function exchange(port: number, head: string | Buffer, then?: (s: net.Socket) => void): Promise<{ data: string }> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let data = '';
    s.on('data', (d) => { data += d.toString('latin1'); });
    s.on('error', () => {});
    s.on('close', () => resolve({ data }));
    s.on('connect', () => { s.write(head); then?.(s); });
  });
}

t.test(`hostile clients (${MODES[0]})`, async (t) => {
  const w = await startWorld(MODES[0]!, { SWEEP_INTERVAL_S: '0' });
  t.teardown(() => w.close());
  const port = w.app.port;
  const tmp = path.join(w.dataDir, 'tmp');
  const auth = `x-api-key: ${w.key}\r\n`;
  const tmpFiles = (): string[] => { try { return readdirSync(tmp); } catch { return []; } };
  const alive = async (t: Test): Promise<void> => {
    const h = await w.req('GET', '/healthz', { key: null });
    t.equal(h.status, 200, 'the server still answers');
  };
  // A sample of /metrics; `missing` when it has no such line (NaN by default: a gauge that went
  // away fails the assertion on it).
  const metric = async (pattern: RegExp, missing = NaN): Promise<number> => {
    const text = await (await w.req('GET', '/metrics', { key: null })).text();
    return Number(pattern.exec(text)?.[1] ?? missing);
  };
  // The answers the server holds for clients that have not read them, and their bytes.
  const held = async (): Promise<{ answers: number; bytes: number }> => ({
    answers: await metric(/^docpipe_http_answers_held (\d+)$/m), bytes: await metric(/^docpipe_http_answer_bytes_held (\d+)$/m),
  });

  await t.test('a slowloris upload (one byte every 4 s) is cut by the idle timeout and its temp file removed', async (t) => {
    let timer: NodeJS.Timeout | undefined;
    let sawTemp = false;
    const watcher = setInterval(() => { if (tmpFiles().length > 0) sawTemp = true; }, 100);
    const r = await exchange(port,
      `POST /v1/convert/text HTTP/1.1\r\nhost: x\r\n${auth}content-type: multipart/form-data; boundary=b\r\ncontent-length: 100000\r\n\r\n`
      + '--b\r\ncontent-disposition: form-data; name="file"; filename="slow.txt"\r\n\r\nfirst bytes ',
      (s) => { timer = setInterval(() => { if (!s.destroyed) s.write('x'); }, 4000); });
    clearInterval(timer);
    clearInterval(watcher);
    t.ok(sawTemp, 'the body was being written to a temp file');
    // The client never stops sending, so the close that ended the exchange is the server's cut
    // (a server that never cut it would hang this file until its timeout).
    t.notMatch(r.data, /^HTTP\/1\.1 200/, 'no conversion came of it');
    for (let i = 0; i < 100 && tmpFiles().length > 0; i++) await sleep(100);
    t.same(tmpFiles(), [], 'the temp file is gone');
    await alive(t);
  });

  await t.test('a client that never reads its answers does not hold up the server', async (t) => {
    // 200 pipelined answers of 90 KB the client never reads: uWS holds no more than the socket took.
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    t.teardown(() => { s.destroy(); });
    await new Promise<void>((r) => s.on('connect', () => r()));
    s.pause();
    s.write(`GET /v1/openapi.json HTTP/1.1\r\nhost: x\r\n\r\n`.repeat(200));
    await sleep(200);
    await alive(t);
    await t.test('and its connection is closed, with one answer held for it at most', async (t) => {
      // uWS closes a connection whose next request arrives while an answer waits for the client:
      // the server holds at most one answer for it (its send timeout, 10 s without progress,
      // would close it too, but every answer the server went on to write meanwhile would be held
      // until then). The server's gauge of held answers tells the two apart, not the clock.
      let most = 0;
      while (holdsConnection(port, s.localPort!)) {
        most = Math.max(most, (await held()).answers);
        await sleep(100);
      }
      t.ok(most <= 1, `the server held ${most} answers for it at most, none beyond the one it was writing`);
      t.same(await held(), { answers: 0, bytes: 0 }, 'and nothing once the server let go of the connection');
      // Reading now drains what the kernel had taken, then the end of the stream.
      let data = '';
      s.on('data', (d: Buffer) => { data += d.toString('latin1'); });
      const ended = new Promise<void>((r) => s.once('close', () => r()));
      s.resume();
      await ended;
      const answers = data.split('HTTP/1.1 200 OK').length - 1;
      t.ok(answers > 0 && answers < 200, `${answers} of the 200 answers were sent before the server gave up`);
    });
  });

  await t.test('an answer a client does not take is held and counted until its next request closes the connection', async (t) => {
    // One request at a time on a connection whose client reads nothing: each 90 KB answer goes
    // into the kernel's buffers until they are full, and the next one waits in the server.
    // a counter with no line for these labels yet has counted none
    const answered = (): Promise<number> => metric(/^docpipe_http_requests_total\{method="GET",route="\/v1\/openapi.json",status="200"\} (\d+)$/m, 0);
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    t.teardown(() => { s.destroy(); });
    await new Promise<void>((r) => s.on('connect', () => r()));
    s.pause();
    let sent = 0;
    let waiting = { answers: 0, bytes: 0 };
    while (sent < 1000 && waiting.answers === 0) {
      const before = await answered();
      s.write('GET /v1/openapi.json HTTP/1.1\r\nhost: x\r\n\r\n');
      sent++;
      // taken whole by the socket (counted as answered), or held
      for (;;) {
        waiting = await held();
        if (waiting.answers > 0 || await answered() > before) break;
        await sleep(20);
      }
    }
    t.equal(waiting.answers, 1, `after ${sent - 1} answers the kernel took whole, the server holds the next one`);
    t.ok(waiting.bytes > 0, `${waiting.bytes} bytes of it`);
    await alive(t);
    t.same(await held(), waiting, 'and holds it while the client reads nothing');
    s.write('GET /v1/openapi.json HTTP/1.1\r\nhost: x\r\n\r\n');
    while (holdsConnection(port, s.localPort!)) await sleep(50);
    t.same(await held(), { answers: 0, bytes: 0 }, 'its next request closed the connection, and the server let the answer go');
  });

  await t.test('a large download: a client that stops reading is cut by the send timeout, one that reads slowly gets all of it', async (t) => {
    // A source of 12 MB: more than the socket buffers hold (about 4 MB when the client reads nothing).
    const line = 'a line of a long text, to be downloaded slowly or not at all\n';
    const text = Buffer.from(line.repeat(Math.ceil(12_000_000 / line.length)));
    const fd = new FormData();
    fd.append('file', new Blob([text]), 'long.txt');
    fd.append('formats', 'markdown');
    const res = await w.req('POST', '/v1/convert/text', { body: fd });
    t.equal(res.status, 200);
    const c = await res.json() as { id: string; files: Array<{ id: string; role: string }> };
    const src = c.files.find((f) => f.role === 'source')!;
    const [row] = await w.db.sql`select blob from files where id = ${src.id}`;
    const blobPath = w.app.deps.blobs.pathOf(row!.blob as string);
    const request = `GET /v1/conversions/${c.id}/files/${src.id}/content HTTP/1.1\r\nhost: x\r\n${auth}\r\n`;

    const stalled = net.connect(port, '127.0.0.1');
    stalled.on('error', () => {});
    t.teardown(() => { stalled.destroy(); });
    await new Promise<void>((r) => stalled.on('connect', () => r()));
    stalled.pause();
    stalled.write(request);

    // The slow reader pauses 2.5 s after every 2.5 MB: slower than the socket, never idle for the
    // send timeout (10 s), and longer than it in all.
    const slow = net.connect(port, '127.0.0.1');
    slow.on('error', () => {});
    t.teardown(() => { slow.destroy(); });
    await new Promise<void>((r) => slow.on('connect', () => r()));
    const chunks: Buffer[] = [];
    let received = 0;
    let pauses = 0;
    slow.on('data', (d: Buffer) => {
      chunks.push(d);
      received += d.length;
      if (received >= (pauses + 1) * 2_500_000) {
        pauses++;
        slow.pause();
        setTimeout(() => slow.resume(), 2500);
      }
    });
    slow.write(request);
    let stalledCut = false;
    // Each request opens the file once it is authenticated and looked up (longer on a busy machine).
    const holding = (): number => openFiles().filter((f) => f === blobPath).length;
    for (let i = 0; i < 100 && holding() < 2; i++) await sleep(50);
    t.equal(holding(), 2, 'both downloads hold the file open');
    const whole = (): boolean => {
      const head = Buffer.concat(chunks.slice(0, 4)).indexOf('\r\n\r\n');
      return head >= 0 && received >= head + 4 + text.length;
    };
    // Until both have ended their way (a server that never cut the stalled one, or never sent the
    // slow one all of it, would hold this file until its timeout).
    while (!whole() || !stalledCut) {
      if (!stalledCut && !holdsConnection(port, stalled.localPort!)) stalledCut = true;
      await sleep(100);
    }
    const all = Buffer.concat(chunks);
    const head = all.indexOf('\r\n\r\n') + 4;
    t.match(all.subarray(0, head).toString('latin1'), /^HTTP\/1\.1 200 OK\r\n/);
    t.ok(all.subarray(head).equals(text), `the slow reader got all ${text.length} bytes, pausing ${pauses} times for 2.5 s`);
    t.ok(pauses >= 4, 'it paused after every 2.5 MB');
    // The stalled client reads now: what the kernel had taken for it, then the end. The server
    // gave up on it rather than finishing (it never held the rest of the file in memory to send).
    const late: Buffer[] = [];
    stalled.on('data', (d: Buffer) => late.push(d));
    const closed = new Promise<void>((r) => stalled.once('close', () => r()));
    stalled.resume();
    await closed;
    const got = Buffer.concat(late).length;
    t.ok(got < text.length, `the stalled download was cut, ${got} of its ${text.length} bytes sent`);
    for (let i = 0; i < 100 && openFiles().includes(blobPath); i++) await sleep(100);
    t.notOk(openFiles().includes(blobPath), 'and the file is closed');
    await alive(t);
  });

  await t.test('220 connections aborting mid-upload leave no temp file and no leaked descriptor', async (t) => {
    await alive(t);
    const before = fds();
    await Promise.all(Array.from({ length: 220 }, (_, i) => new Promise<void>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.write(`POST /v1/convert/text HTTP/1.1\r\nhost: x\r\n${auth}content-type: multipart/form-data; boundary=b\r\ncontent-length: 10000000\r\n\r\n`);
        s.write(`--b\r\ncontent-disposition: form-data; name="file"; filename="a${i}.txt"\r\n\r\n`);
        s.write(Buffer.alloc(64 * 1024 + (i % 7) * 1000, 0x61), () => setTimeout(() => { s.destroy(); resolve(); }, 20 + (i % 10) * 5));
      });
      s.on('error', () => resolve());
    })));
    let left: string[] = tmpFiles();
    for (let i = 0; i < 50 && (left.length > 0 || fds() > before + 2); i++) { await sleep(100); left = tmpFiles(); }
    t.same(left, [], 'DATA_DIR/tmp is empty');
    t.ok(fds() <= before + 2, `open descriptors: ${before} before, ${fds()} after`);
    await alive(t);
  });

  await t.test('a 1 MB header is refused without reaching a handler', async (t) => {
    const r = await exchange(port, `GET /v1/conversions HTTP/1.1\r\nhost: x\r\n${auth}x-junk: ${'a'.repeat(1024 * 1024)}\r\n\r\n`);
    t.notMatch(r.data, /^HTTP\/1\.1 200/, 'not served');
    t.ok(r.data === '' || /^HTTP\/1\.1 4\d\d/.test(r.data), `cut or 4xx: ${JSON.stringify(r.data.slice(0, 40))}`);
    await alive(t);
  });

  await t.test('thousands of headers are refused', async (t) => {
    const many = Array.from({ length: 5000 }, (_, i) => `x-h${i}: v`).join('\r\n');
    const r = await exchange(port, `GET /v1/conversions HTTP/1.1\r\nhost: x\r\n${auth}${many}\r\n\r\n`);
    t.notMatch(r.data, /^HTTP\/1\.1 200/, 'not served');
    await alive(t);
  });

  await t.test('JSON nested 100,000 deep is refused as invalid_request before parsing', async (t) => {
    const deep = `{"text":"a","metadata":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`;
    const res = await w.req('POST', '/v1/convert/text', { body: deep, headers: { 'content-type': 'application/json' } });
    t.equal(res.status, 400);
    t.match((await res.json() as { detail: string }).detail, /nesting/);
  });

  await t.test('a JSON array of 2 million items is refused, and small JSON routes cap their bodies', async (t) => {
    const huge = `{"text":"a","metadata":{"x":[${'0,'.repeat(2_000_000)}0]}}`;
    const res = await w.req('POST', '/v1/convert/markdown/html', { body: huge, headers: { 'content-type': 'application/json' } });
    t.ok([400, 413].includes(res.status), `refused with ${res.status}`);
    const hook = await w.req('POST', '/v1/webhooks', { body: `{"url":"https://example.com","eventTypes":[${'"x",'.repeat(100_000)}"x"]}`, headers: { 'content-type': 'application/json' } });
    t.equal(hook.status, 413, 'a webhook body over its 16 KB cap is 413');
    const up = await w.req('POST', '/v1/uploads', { body: `{"bytes":1,"name":"a","x":[${'1,'.repeat(1_000_000)}1]}`, headers: { 'content-type': 'application/json' } });
    t.equal(up.status, 413, 'an upload body over its 1 MB cap is 413');
    await alive(t);
  });

  await t.test('a Content-Length of ten digits gets a 413 problem, not a dropped connection', {
    // uWS 20.30 runs the handler, then its parser refuses a Content-Length of ten digits or more
    // and closes the connection before uncorking: the answer is dropped. Only an answer larger
    // than uWS's 16 KB cork buffer gets out (it is flushed while written), so padding the problem
    // would do it; that is not done.
    todo: 'uWS (native) closes the connection when Content-Length ≥ 1,000,000,000 and drops the handler\'s corked answer',
  }, async (t) => {
    const r = await exchange(port, `POST /v1/convert/text HTTP/1.1\r\nhost: x\r\n${auth}content-type: multipart/form-data; boundary=b\r\ncontent-length: 1000000000\r\n\r\n`);
    t.match(r.data, /^HTTP\/1\.1 413/);
  });

  await t.test('the same declared length one byte under 1e9 is answered 413', async (t) => {
    const r = await exchange(port, `POST /v1/convert/text HTTP/1.1\r\nhost: x\r\n${auth}content-type: multipart/form-data; boundary=b\r\ncontent-length: 999999999\r\n\r\n`);
    t.match(r.data, /^HTTP\/1\.1 413/);
    t.match(r.data, /payload_too_large/);
  });
});

