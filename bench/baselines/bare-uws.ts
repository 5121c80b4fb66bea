// The ceiling of scenario A: a bare uWebSockets.js server (the library docpipe is built on) that
// reads the JSON body, parses it and answers the response docpipe gave to the same request,
// doing nothing else. Run as its own process: `node --import=tsx bench/baselines/bare-uws.ts`
// with PORT and RESPONSE_FILE; prints "ready" when it listens.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const uws = createRequire(import.meta.url)('uWebSockets.js') as typeof import('uWebSockets.js');
// the same refusal of the pure-JS fallback as src/server/app.ts: the ceiling must be native
if (typeof (uws as { SSLApp?: unknown }).SSLApp !== 'function') throw new Error('uWebSockets.js native binary missing');
const answer = readFileSync(process.env.RESPONSE_FILE!);
const app = uws.App();
app.post('/*', (res) => {
  let aborted = false;
  const chunks: Buffer[] = [];
  res.onAborted(() => { aborted = true; });
  res.onData((chunk, last) => {
    chunks.push(Buffer.from(chunk.slice(0)));
    if (!last) return;
    JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (aborted) return;
    res.cork(() => {
      res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(answer);
    });
  });
});
app.listen('127.0.0.1', Number(process.env.PORT), (sock) => {
  if (!sock) { console.error('cannot listen'); process.exit(1); }
  console.log('ready');
});
