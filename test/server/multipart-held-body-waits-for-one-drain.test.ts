// A multipart body that arrived whole while its request waited (auth, rate limit) is handed to
// the parser chunk after chunk at once; each chunk may find the parser full. The reader waits
// for the parser's drain once, not once per chunk: with a listener per chunk, a body in more
// than ten chunks made node warn of a leak (MaxListenersExceededWarning, seen under scenario B).
import t from 'tap';
import os from 'node:os';
import path from 'node:path';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadUws } from '../../src/server/uws.js';
import { listenBare } from '../helpers/bare-uws.js';
import { postInPieces } from '../helpers/post-in-pieces.js';
import { makeCtx, reply } from '../../src/server/respond.js';
import { readMultipart } from '../../src/server/body.js';

const PIECES = 64;
const PIECE_BYTES = 16 * 1024;

t.test('a multipart body held whole before it is read', async (t) => {
  const uws = loadUws();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-held-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const warnings: string[] = [];
  const onWarning = (w: Error): void => { warnings.push(`${w.name}: ${w.message}`); };
  process.on('warning', onWarning);
  t.teardown(() => { process.off('warning', onWarning); });

  const content = Buffer.alloc(PIECES * PIECE_BYTES);
  for (let i = 0; i < content.length; i++) content[i] = 97 + (i % 26);
  const head = Buffer.from('--b\r\ncontent-disposition: form-data; name="file"; filename="a.txt"\r\ncontent-type: text/plain\r\n\r\n');
  const body = Buffer.concat([head, content, Buffer.from('\r\n--b--\r\n')]);

  let chunksHeld = 0;
  let kept = '';
  const app = uws.App();
  app.post('/up', (res, req) => {
    const ctx = makeCtx(res, req);
    // The body is left to arrive whole (held by the reader) before the parser sees any of it.
    const wait = setInterval(() => {
      if (!ctx.body!.complete) return;
      clearInterval(wait);
      chunksHeld = (ctx.body as unknown as { queue: unknown[] }).queue.length;
      readMultipart(ctx, dir, { maxBytes: 10 * 1024 * 1024, maxFiles: 1, maxFields: 1, maxFieldBytes: 1024 })
        .then((mp) => {
          kept = readFileSync(mp.files[0]!.path, 'latin1');
          reply(ctx, 200, String(mp.files[0]!.bytes), 'text/plain');
        }, (err: Error) => reply(ctx, 500, err.message, 'text/plain'));
    }, 5);
  });
  const port = await listenBare(t, app);

  // In pieces with a pause between them, so that they arrive as separate chunks.
  const answer = await postInPieces(port, '/up', body, { piece: PIECE_BYTES, pauseMs: 2, boundary: 'b', whole: (d) => /\r\n\r\n\d+$/.test(d) });
  await new Promise((r) => setImmediate(r));
  t.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
  t.ok(chunksHeld > 10, `the body was held in more than ten chunks before it was read (${chunksHeld})`);
  t.equal(answer.split('\r\n\r\n')[1], String(content.length), 'the file arrived whole');
  t.ok(kept === content.toString('latin1'), 'the file on disk holds the uploaded bytes');
  t.same(warnings, [], 'no warning (no drain listener per chunk)');
});
