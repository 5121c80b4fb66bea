// Scenario A's node:http baseline: reads the JSON body, parses it and answers the response
// docpipe gave to the same request, doing nothing else. Run as its own process with PORT and
// RESPONSE_FILE; prints "ready" when it listens.
import { readFileSync } from 'node:fs';
import http from 'node:http';

const answer = readFileSync(process.env.RESPONSE_FILE!);
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    JSON.parse(Buffer.concat(chunks).toString('utf8'));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length });
    res.end(answer);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('ready'));
