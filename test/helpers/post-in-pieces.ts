// A multipart POST written to a raw socket, its body in pieces a moment apart so that the server
// receives them as separate chunks; resolves with what came back once `whole` says the answer
// is complete.
import net from 'node:net';

export function postInPieces(port: number, path: string, body: Buffer, opts: { piece: number; pauseMs: number; boundary: string; whole: (answer: string) => boolean }): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    s.setNoDelay(true);
    let data = '';
    s.on('error', reject);
    s.on('data', (d: Buffer) => {
      data += d.toString('latin1');
      if (opts.whole(data)) { s.destroy(); resolve(data); }
    });
    s.on('connect', async () => {
      s.write(`POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: multipart/form-data; boundary=${opts.boundary}\r\ncontent-length: ${body.length}\r\n\r\n`);
      for (let at = 0; at < body.length; at += opts.piece) {
        s.write(body.subarray(at, at + opts.piece));
        await new Promise((r) => setTimeout(r, opts.pauseMs));
      }
    });
  });
}
