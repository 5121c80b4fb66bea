// Streams a raw request body (an upload part) into one file, hashing MD5 on the way. Never holds
// the body: when the file's write buffer is full the socket is paused until the disk drains.
// The file is removed on any failure and, through onCleanup, when the request ends — a
// caller keeps it by renaming it first. Or, given an offset, the body is written into an
// existing file shared with other writers (an upload's parts in their places), never truncated
// nor removed, and a failure is reported only once the file is closed, so the caller can hand
// the region to another writer as soon as it hears of it.
import { createWriteStream, mkdirSync } from 'node:fs';
import { removeFile } from '../store/blobs.js';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { ApiError, storageError } from '../errors.js';
import { onCleanup, type Ctx } from './respond.js';

export interface WrittenFile {
  path: string;
  bytes: number;
  /** Lower-case hex MD5 of the bytes. */
  md5: string;
}

/** Bytes the write stream buffers before the socket is paused. */
const WRITE_BUFFER = 4 * 1024 * 1024;

/**
 * Reads the body of `ctx` into `target`, refusing it past `limit` bytes with `tooLarge()` (also
 * up front, from Content-Length). Storage errors become 503 (storageError: service_unavailable
 * when the disk is full). With `at`, the body goes to `target` from byte `at.offset` on.
 */
export function readToFile(ctx: Ctx, target: string, limit: number, tooLarge: () => ApiError,
  at?: { offset: number }): Promise<WrittenFile> {
  const body = ctx.body;
  if (!body) return Promise.reject(new ApiError('invalid_request', `${ctx.method} requests carry no body.`));
  const declared = Number(ctx.headers['content-length'] ?? 'NaN');
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge());
  mkdirSync(path.dirname(target), { recursive: true });

  return new Promise((resolve, reject) => {
    const out = at
      ? createWriteStream(target, { flags: 'r+', start: at.offset, highWaterMark: WRITE_BUFFER })
      : createWriteStream(target, { highWaterMark: WRITE_BUFFER });
    const hash = createHash('md5');
    let total = 0;
    let settled = false;
    let waitingForDrain = false;

    const fail = (err: unknown): void => {
      if (settled) return;
      settled = true;
      if (at) {
        if (out.closed) reject(err);
        else out.once('close', () => reject(err));
        out.destroy();
        return;
      }
      out.destroy();
      removeFile(target).catch(() => {});
      reject(err);
    };
    if (!at) onCleanup(ctx, () => removeFile(target));
    onCleanup(ctx, () => fail(new ApiError('invalid_request', 'The client went away.')));
    out.on('error', (e) => fail(storageError(e, 'writing the part')));
    out.on('drain', () => {
      waitingForDrain = false;
      if (!settled) body.resume();
    });
    out.on('finish', () => {
      if (settled) return;
      settled = true;
      resolve({ path: target, bytes: total, md5: hash.digest('hex') });
    });

    body.consume((chunk, isLast) => {
      if (settled) return;
      total += chunk.byteLength;
      if (total > limit) return fail(tooLarge());
      hash.update(chunk);
      if (!out.write(chunk) && !isLast) {
        waitingForDrain = true;
        body.pause();
      }
      if (isLast) out.end();
    });
    // consume() resumes the socket after handing over what was held: re-pause if the disk is behind.
    if (waitingForDrain && !settled) body.pause();
  });
}
