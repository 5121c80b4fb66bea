// Joins an upload's part files, in part order, into one file by stream copy (never the whole
// file in memory), and names the result S3-style: MD5 of the parts' binary MD5s, "-" part count.
import { mkdirSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import path from 'node:path';

const COPY_CHUNK = 4 * 1024 * 1024;

/** `"<hex md5>"` → `<hex md5>`: clients send etags with or without their quotes. */
export function bareEtag(etag: string): string {
  return etag.trim().replace(/^W\//, '').replace(/^"(.*)"$/, '$1').toLowerCase();
}

export function quoteEtag(hexMd5: string): string {
  return `"${hexMd5}"`;
}

/** The etag of a multipart object: MD5 over the concatenated binary MD5s of its parts, `-N`. */
export function multipartEtag(partEtags: string[]): string {
  const h = createHash('md5');
  for (const e of partEtags) h.update(Buffer.from(bareEtag(e), 'hex'));
  return `"${h.digest('hex')}-${partEtags.length}"`;
}

/** A whole file, or `bytes` of it from `offset` on. */
export interface Source {
  path: string;
  offset?: number;
  bytes?: number;
}

/**
 * Writes the `parts` one after another into `target` and returns its size. One COPY_CHUNK
 * buffer is reused throughout. On any error the partial target is removed and the error is
 * rethrown; a region that ends early is an error.
 */
export async function concatFiles(parts: Source[], target: string): Promise<number> {
  mkdirSync(path.dirname(target), { recursive: true });
  const out = await open(target, 'w');
  const buf = Buffer.allocUnsafe(COPY_CHUNK);
  let size = 0;
  try {
    for (const p of parts) {
      const input = await open(p.path, 'r');
      try {
        let at = p.offset ?? 0;
        let left = p.bytes ?? Infinity;
        while (left > 0) {
          const { bytesRead } = await input.read(buf, 0, Math.min(COPY_CHUNK, left), at);
          if (bytesRead === 0) break;
          for (let off = 0; off < bytesRead;) off += (await out.write(buf, off, bytesRead - off)).bytesWritten;
          size += bytesRead;
          at += bytesRead;
          left -= bytesRead;
        }
        if (p.bytes !== undefined && left > 0) throw new Error(`${p.path} ends ${left} bytes before its region does`);
      } finally {
        await input.close();
      }
    }
    await out.close();
    return size;
  } catch (err) {
    await out.close().catch(() => {});
    await rm(target, { force: true });
    throw err;
  }
}
