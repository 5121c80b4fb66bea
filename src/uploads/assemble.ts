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

/**
 * Writes the files at `parts` one after another into `target` and returns its size. One
 * COPY_CHUNK buffer is reused throughout. On any error the partial target is removed and the
 * error is rethrown.
 */
export async function concatFiles(parts: string[], target: string): Promise<number> {
  mkdirSync(path.dirname(target), { recursive: true });
  const out = await open(target, 'w');
  const buf = Buffer.allocUnsafe(COPY_CHUNK);
  let size = 0;
  try {
    for (const p of parts) {
      const input = await open(p, 'r');
      try {
        for (;;) {
          const { bytesRead } = await input.read(buf, 0, COPY_CHUNK, null);
          if (bytesRead === 0) break;
          for (let off = 0; off < bytesRead;) off += (await out.write(buf, off, bytesRead - off)).bytesWritten;
          size += bytesRead;
        }
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
