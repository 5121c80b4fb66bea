// Sends a stored file (or a small in-memory content) as a response body: GET and HEAD, single
// byte ranges (`bytes=a-b`, `a-`, `-n` → 206 with Content-Range; unsatisfiable → 416), and
// uWS backpressure: the file is read CHUNK bytes at a time and the next chunk is read only once
// uWS took the previous one (tryEnd / onWritable), so a 1 GB download never sits in memory.
// Multi-range requests, or a Range with If-Range (no validators here), get the whole file.
import { open, type FileHandle } from 'node:fs/promises';
import { ApiError } from '../errors.js';
import { finish, onCleanup, reply, statusLine, type Ctx } from './respond.js';

const CHUNK = 256 * 1024;

export type ByteRange = { start: number; end: number };

/** A single byte range of a `size`-byte entity; undefined = serve it all; 'unsatisfiable' = 416. */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  if (m[2] !== '' && Number(m[2]) < start) return undefined; // not a valid range-spec: ignored (RFC 9110)
  if (start >= size) return 'unsatisfiable';
  return { start, end: m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1) };
}

export type Content = { path: string } | { data: Buffer };

/**
 * Answers ctx with `content`. A file that does not exist is 404 not_found. Resolves when the
 * response is fully handed to uWS or the client went away.
 */
export async function sendContent(ctx: Ctx, content: Content, contentType: string, headers: Record<string, string> = {}): Promise<void> {
  let fh: FileHandle | undefined;
  let size: number;
  if ('path' in content) {
    try {
      fh = await open(content.path, 'r');
      size = (await fh.stat()).size;
    } catch (err) {
      await fh?.close();
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new ApiError('not_found', 'The file\'s content is no longer stored.');
      throw err;
    }
  } else size = content.data.length;

  const range = ctx.headers['if-range'] === undefined ? parseRange(ctx.headers.range, size) : undefined;
  if (range === 'unsatisfiable') {
    await fh?.close();
    throw new ApiError('range_not_satisfiable', `The range "${ctx.headers.range}" is outside the file's ${size} bytes.`, { 'content-range': `bytes */${size}` });
  }
  const start = range ? range.start : 0;
  const length = range ? range.end - range.start + 1 : size;
  const status = range ? 206 : 200;
  const all: Record<string, string> = { ...headers, 'accept-ranges': 'bytes' };
  if (range) all['content-range'] = `bytes ${range.start}-${range.end}/${size}`;

  if (ctx.method === 'HEAD') {
    await fh?.close();
    headOnly(ctx, status, contentType, all, length);
    return;
  }
  if (!fh) {
    const data = (content as { data: Buffer }).data;
    reply(ctx, status, data.subarray(start, start + length), contentType, all);
    return;
  }
  try {
    await stream(ctx, fh, start, length, status, contentType, all);
  } finally {
    await fh.close().catch(() => {});
  }
}

function writeHead(ctx: Ctx, status: number, contentType: string, headers: Record<string, string>): void {
  ctx.res.writeStatus(statusLine(status));
  ctx.res.writeHeader('content-type', contentType);
  ctx.res.writeHeader('x-request-id', ctx.requestId);
  for (const [k, v] of Object.entries(headers)) ctx.res.writeHeader(k, v);
}

function headOnly(ctx: Ctx, status: number, contentType: string, headers: Record<string, string>, length: number): void {
  if (ctx.aborted || ctx.answered) return;
  ctx.answered = true;
  ctx.status = status;
  ctx.res.cork(() => {
    writeHead(ctx, status, contentType, headers);
    // endWithoutBody(length) of this uWS build closes the connection: write the length ourselves.
    ctx.res.writeHeader('content-length', String(length));
    ctx.res.endWithoutBody();
  });
  finish(ctx);
}

async function stream(ctx: Ctx, fh: FileHandle, start: number, length: number, status: number,
  contentType: string, headers: Record<string, string>): Promise<void> {
  if (ctx.aborted || ctx.answered) return;
  ctx.answered = true;
  ctx.status = status;
  const res = ctx.res;
  if (length === 0) {
    res.cork(() => { writeHead(ctx, status, contentType, headers); res.end(); });
    finish(ctx);
    return;
  }
  // The chunk uWS could not take whole, and the write offset before it was offered.
  let pending: { buf: Buffer; offset: number } | undefined;
  let wake: (() => void) | undefined;
  let done = false;
  onCleanup(ctx, () => wake?.());
  res.onWritable((offset) => {
    if (!pending || ctx.aborted) return true;
    const [ok, finished] = res.tryEnd(pending.buf.subarray(offset - pending.offset), length);
    if (finished) done = true;
    if (ok || finished) { pending = undefined; wake?.(); }
    return ok;
  });

  let sent = 0;
  let first = true;
  while (!done && !ctx.aborted && sent < length) {
    const n = Math.min(CHUNK, length - sent);
    const buf = Buffer.allocUnsafe(n);
    const { bytesRead } = await fh.read(buf, 0, n, start + sent);
    if (ctx.aborted) break;
    if (bytesRead !== n) {
      // The file shrank under us: the promised length cannot be met; drop the connection.
      res.close();
      break;
    }
    sent += n;
    let ok = false;
    res.cork(() => {
      if (first) { writeHead(ctx, status, contentType, headers); first = false; }
      const offset = res.getWriteOffset();
      const [accepted, finished] = res.tryEnd(buf, length);
      ok = accepted;
      if (finished) done = true;
      else if (!accepted) pending = { buf, offset };
    });
    if (!ok && !done && !ctx.aborted) {
      await new Promise<void>((resolve) => { wake = resolve; });
      wake = undefined;
    }
  }
  finish(ctx);
}
