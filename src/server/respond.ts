// One request's state and every way to answer it. uWS rules kept here, once:
// - `onAborted` is attached before anything else and only marks the request aborted;
// - every reply goes through `reply`, which corks and checks the aborted/answered flags;
// - a body is handed over with tryEnd, never end(): uWS holds no more of it than the socket
//   takes, and the rest is offered again when the socket is writable (see endWhenWritable);
// - `finish` runs the request's clean-ups (temp files) exactly once, whatever path ends it.
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { randomBytesPooled } from '../store/ids.js';
import { ApiError, DISK_FULL, isDependencyDown, isDiskFull, problemOf, type ErrorCode, type ProblemOverrides } from '../errors.js';
import type { Principal } from '../store/accounts.js';
import { BodyReader } from './body-reader.js';

export interface Ctx {
  res: HttpResponse;
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  params: Record<string, string>;
  requestId: string;
  startedAt: number;
  aborted: boolean;
  answered: boolean;
  status: number;
  principal?: Principal;
  /** The route pattern that matched, for logs and metrics. */
  route: string;
  /** What runs once the request has ended (register with onCleanup). */
  cleanups: Array<() => unknown>;
  /** True once the request has ended and its clean-ups ran: later ones run at once. */
  cleanedUp: boolean;
  /** The request body, held paused until a handler reads it (POST, PUT, PATCH). */
  body?: BodyReader;
  /** Called once when the request ends: answered, aborted or failed. */
  onDone?: (ctx: Ctx) => void;
  /** Its app's count of answers waiting for their clients to read them (endWhenWritable). */
  held?: Held;
}

/**
 * Answers an app holds because their clients have not read them yet (a slow reader, or one that
 * stopped reading), and those answers' bytes: each is held from the write the socket did not
 * take whole until it is taken or the request ends. /metrics shows both (Metrics.watchHeld).
 */
export interface Held {
  answers: number;
  bytes: number;
}

/** Unread request bodies up to this size are drained to keep the connection alive. */
const DRAIN_LIMIT = 1024 * 1024;

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function newRequestId(): string {
  return `req_${randomBytesPooled(12).toString('base64url')}`;
}

/** Reads everything needed from the stack-allocated HttpRequest before any await. */
export function makeCtx(res: HttpResponse, req: HttpRequest, held?: Held): Ctx {
  const headers: Record<string, string> = {};
  req.forEach((k, v) => { headers[k] = v; });
  const given = headers['x-request-id'];
  const ctx: Ctx = {
    res,
    method: req.getCaseSensitiveMethod().toUpperCase(),
    path: req.getUrl(),
    query: new URLSearchParams(req.getQuery() ?? ''),
    headers,
    params: {},
    requestId: given && REQUEST_ID.test(given) ? given : newRequestId(),
    startedAt: performance.now(),
    aborted: false,
    answered: false,
    status: 0,
    route: '',
    cleanups: [],
    cleanedUp: false,
    held,
  };
  res.onAborted(() => {
    ctx.aborted = true;
    finish(ctx);
  });
  if (ctx.method === 'POST' || ctx.method === 'PUT' || ctx.method === 'PATCH') {
    ctx.body = new BodyReader(res, () => ctx.aborted || ctx.answered);
  }
  return ctx;
}

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 206: 'Partial Content',
  304: 'Not Modified', 400: 'Bad Request', 401: 'Unauthorized', 402: 'Payment Required',
  403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict', 410: 'Gone',
  413: 'Payload Too Large', 415: 'Unsupported Media Type', 416: 'Range Not Satisfiable',
  422: 'Unprocessable Entity', 429: 'Too Many Requests', 500: 'Internal Server Error',
  501: 'Not Implemented', 503: 'Service Unavailable',
};

export function statusLine(status: number): string {
  return `${status} ${STATUS_TEXT[status] ?? ''}`.trim();
}

/**
 * Writes a whole response. `close` asks uWS to close the connection after it (used when the
 * request body was not read, e.g. a 413, so the client's remaining bytes are not parsed).
 */
export function reply(
  ctx: Ctx, status: number, body: string | Buffer, contentType: string,
  headers: Record<string, string> = {}, close = false,
): void {
  if (ctx.aborted || ctx.answered) return;
  ctx.answered = true;
  ctx.status = status;
  const write = (): void => {
    if (ctx.aborted) return;
    ctx.body?.answering();
    let taken = true;
    ctx.res.cork(() => {
      ctx.res.writeStatus(statusLine(status));
      ctx.res.writeHeader('content-type', contentType);
      ctx.res.writeHeader('x-request-id', ctx.requestId);
      for (const [k, v] of Object.entries(headers)) ctx.res.writeHeader(k, v);
      if (close) {
        // A small problem, and the connection closes once it is sent.
        ctx.res.writeHeader('connection', 'close');
        ctx.res.end(body, true);
      } else {
        taken = endWhenWritable(ctx, body);
      }
    });
    if (taken) finish(ctx);
  };
  // A body we did not read must be drained before the connection's next request; a large one
  // is not worth receiving: close the connection instead.
  if (ctx.body && !ctx.body.complete && !close) {
    const declared = Number(ctx.headers['content-length'] ?? 'NaN');
    if (declared <= DRAIN_LIMIT) { ctx.body.discard(write); return; }
    close = true;
  }
  write();
}

/**
 * Ends the response with `body` (call it corked). uWS's end() keeps in its own buffer whatever
 * the socket does not take, answer after answer: a client that pipelines 2,000 requests for a
 * 90 KB answer (90 KB sent) and reads nothing would have 180 MB held for it. tryEnd takes only
 * what the socket accepts; the rest stays here and is offered again from onWritable. While an
 * answer waits, uWS closes the connection when another request arrives on it, so one connection
 * holds one waiting body; and its send timeout (10 s without progress) closes a connection whose
 * client stopped reading. Either way onAborted ends the request. Returns true when uWS took the
 * whole body; otherwise finish() runs once it has. A string goes to uWS as it is (uWS encodes it
 * straight into its send buffer); only one the socket did not take whole is made a Buffer.
 */
function endWhenWritable(ctx: Ctx, sent: string | Buffer): boolean {
  const res = ctx.res;
  const size = typeof sent === 'string' ? Buffer.byteLength(sent) : sent.length;
  const [, done] = res.tryEnd(sent, size);
  if (done) return true;
  const body = typeof sent === 'string' ? Buffer.from(sent) : sent;
  const held = ctx.held;
  if (held) {
    held.answers++;
    held.bytes += body.length;
    // finish() runs the clean-ups once, when uWS has taken the rest or the request is aborted
    onCleanup(ctx, () => {
      held.answers--;
      held.bytes -= body.length;
    });
  }
  // The write offset counts this response's body bytes, from 0.
  res.onWritable((offset) => {
    if (ctx.aborted) return true;
    const [ok, finished] = res.tryEnd(body.subarray(offset), body.length);
    if (finished) finish(ctx);
    return ok;
  });
  return false;
}

export function sendJson(ctx: Ctx, status: number, body: unknown, headers: Record<string, string> = {}): void {
  reply(ctx, status, JSON.stringify(body), 'application/json', headers);
}

export function sendProblem(ctx: Ctx, code: ErrorCode, detail: string, headers: Record<string, string> = {}, close = false,
  overrides: ProblemOverrides = {}): void {
  const problem = problemOf(code, detail, ctx.path, ctx.requestId, overrides);
  reply(ctx, problem.status, JSON.stringify(problem), 'application/problem+json', headers, close);
}

/** Answers with whatever was thrown: an ApiError as its Problem, a failed dependency or a full
 *  disk as 503 service_unavailable (retryable), anything else as a 500. */
export function sendError(ctx: Ctx, err: unknown, log?: (err: unknown) => void): void {
  if (err instanceof ApiError) {
    sendProblem(ctx, err.code, err.message, err.headers, err.status === 413, err.overrides);
    return;
  }
  if (isDiskFull(err)) {
    log?.(err);
    sendProblem(ctx, 'service_unavailable', DISK_FULL, { 'retry-after': '5' });
    return;
  }
  if (isDependencyDown(err)) {
    sendProblem(ctx, 'service_unavailable', 'A dependency (database or cache) is unavailable; retry shortly.', { 'retry-after': '1' });
    return;
  }
  log?.(err);
  sendProblem(ctx, 'internal_error', 'The server failed to handle this request.');
}

/**
 * Runs `fn` once the request has ended (answered, aborted or failed). A clean-up registered after
 * that (by a handler still awaiting when the client went away, e.g. a body reader opening its temp
 * file) runs at once, instead of waiting for a finish() that already happened.
 */
export function onCleanup(ctx: Ctx, fn: () => unknown): void {
  if (ctx.cleanedUp) runCleanup(fn);
  else ctx.cleanups.push(fn);
}

/**
 * Runs the request's clean-ups registered so far and waits for them, before an error is answered:
 * the temp files of a refused request are gone when the client reads the answer (after a full
 * disk, its retry finds the space freed). finish() later runs only what is registered after.
 */
export async function cleanUpNow(ctx: Ctx): Promise<void> {
  const list = ctx.cleanups;
  if (list.length === 0 || ctx.aborted || ctx.answered) return;
  ctx.cleanups = [];
  await Promise.allSettled(list.map(async (fn) => fn()));
}

function runCleanup(fn: () => unknown): void {
  try {
    const r = fn();
    if (r instanceof Promise) r.catch(() => {});
  } catch { /* clean-up never throws into a request */ }
}

export function finish(ctx: Ctx): void {
  const cleanups = ctx.cleanups;
  if (cleanups.length === 0 && !ctx.onDone) {
    if (ctx.aborted || ctx.answered) ctx.cleanedUp = true;
    return;
  }
  ctx.cleanups = [];
  ctx.cleanedUp = true;
  for (const fn of cleanups) runCleanup(fn);
  const done = ctx.onDone;
  ctx.onDone = undefined;
  done?.(ctx);
}
