// A webhook receiver for tests: a node:http server on 127.0.0.1 that records every request
// (headers, raw body, arrival time) and answers from a script: one entry per request in order
// (a status with headers, or 'hang' to never answer), then 200 for the rest.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Answer = number | { status: number; headers?: Record<string, string> } | 'hang';

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  /** performance.now() when the request's body had arrived. */
  at: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Resolves once `n` requests have arrived; rejects after `timeoutMs`. */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(script: Answer[] = []): Promise<Receiver> {
  const received: Received[] = [];
  const waiters: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = script[received.length] ?? 200;
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: performance.now() });
      for (const w of waiters.splice(0)) w();
      if (answer === 'hang') return;
      const { status, headers } = typeof answer === 'number' ? { status: answer, headers: {} } : answer;
      res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(`answered ${status}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    async waitFor(n, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < n) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`expected ${n} webhook requests, got ${received.length}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => { clearTimeout(timer); resolve(); });
        });
      }
      return received.slice(0, n);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
