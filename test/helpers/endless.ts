// An HTTP answer with no Content-Length and no end: what a URL fetch's size cap must stop.
import type { ServerResponse } from 'node:http';

/** Answers 200 text/plain and writes 64 KB chunks for as long as the client takes them. */
export function pourForever(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/plain' });
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const pump = (): void => {
    while (!res.destroyed && res.write(chunk));
  };
  res.on('drain', pump);
  pump();
}
