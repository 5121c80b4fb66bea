// What holds a request's body from the moment uWS starts delivering it until a reader (body.ts,
// read-to-file.ts) consumes it. The request context (respond.ts) makes one per request.
import type { HttpResponse } from 'uWebSockets.js';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * uWS delivers a body only to an onData handler attached before the route handler returns,
 * but our handlers authenticate first. So every request that may carry a body gets one of
 * these at once: it holds what arrives (pausing the socket past HOLD_BYTES) until a reader
 * consumes it. (Pausing every request up front breaks keep-alive connections in this uWS build.)
 */
const HOLD_BYTES = 1024 * 1024;

/**
 * A request whose body has arrived but that is still unanswered this long after is paused, which
 * clears uWS's idle timeout (HTTP_IDLE_TIMEOUT_S, 10 s, counted from the last byte received; uWS
 * checks it every 4 s) so a long wait for a conversion is not cut. Pausing at once cost two
 * epoll_ctl calls per request (pause, and resume to answer): about 5 % of an acceptor's CPU on
 * the cheap path, whose requests are answered within milliseconds. A sweep every REST_MS pauses
 * the ones still waiting, between REST_MS and twice that after their last byte: well inside the
 * idle timeout.
 */
const REST_MS = 1000;

/**
 * Bodies complete, requests unanswered, not yet paused, in arrival order: a list linked through
 * the readers themselves, each unlinked (its links cleared) when answered or paused. It was a
 * Map, whose table V8 rebuilds every few dozen requests under the cheap path's churn; a table left
 * behind keeps the entries it had and a link to the next one (for iterators), and once such a
 * table sits dead in the old generation, what it points to survives every young collection until
 * the next full one. Under scenario A's load the bytes promoted a request fell from 5.3 to 4.0 KB
 * with this list in its place (`--trace-gc-nvp`; README, Benchmarks).
 */
let firstResting: BodyReader | undefined;
let lastResting: BodyReader | undefined;
let sweep: NodeJS.Timeout | undefined;

function rest(reader: BodyReader): void {
  reader.restedAt = Date.now();
  reader.restPrev = lastResting;
  if (lastResting) lastResting.restNext = reader;
  else firstResting = reader;
  lastResting = reader;
  sweep ??= setInterval(pauseRested, REST_MS).unref();
}

/** Whether `reader` is in the list (the first one has no link before it). */
function isResting(reader: BodyReader): boolean {
  return reader.restPrev !== undefined || firstResting === reader;
}

function unrest(reader: BodyReader): void {
  if (!isResting(reader)) return;
  const { restPrev: prev, restNext: next } = reader;
  if (prev) prev.restNext = next;
  else firstResting = next;
  if (next) next.restPrev = prev;
  else lastResting = prev;
  reader.restPrev = reader.restNext = undefined;
}

function pauseRested(): void {
  const due = Date.now() - REST_MS;
  // in arrival order: the first one not yet due ends the sweep
  while (firstResting && firstResting.restedAt <= due) {
    const reader = firstResting;
    unrest(reader);
    reader.pause();
  }
  if (!firstResting) {
    clearInterval(sweep);
    sweep = undefined;
  }
}

/**
 * Body bytes this thread copies out of uWS (a Buffer for each chunk) between two collections of
 * V8's young generation that it asks for. A chunk's copy is garbage as soon as it is written to
 * disk, but V8 counts its memory as external to its heap and collects for that only after tens of
 * MB: scenario F's 100 MB multipart upload raised the server's RSS by 29.8–33.7 MB, the copies it
 * had made and not yet freed, against 9.1–10.6 MB with a young collection every 8 MB of body. Such a
 * collection visits only what is alive in the young generation: F's 1 GiB chunked upload (128 of
 * them) ran at 455–491 MB/s with it against 458–521 without (three runs each, alternating).
 */
const COLLECT_EVERY_BYTES = 8 * 1024 * 1024;

/** This thread's young-generation collection, when V8 lets one be had (the gc extension, bound
 *  to this isolate and left out of the contexts made afterwards). V8's flags are the process's:
 *  should two threads load this module at the same instant, one may find the flag already set
 *  back and go without; its copies are then freed on V8's own schedule, as before. */
const collectYoung = ((): (() => void) | undefined => {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as (options: { type: 'minor' | 'major' }) => void;
    setFlagsFromString('--no-expose-gc');
    return typeof gc === 'function' ? () => gc({ type: 'minor' }) : undefined;
  } catch {
    return undefined;
  }
})();

let copiedSinceCollect = 0;

function copied(bytes: number): void {
  copiedSinceCollect += bytes;
  if (copiedSinceCollect < COLLECT_EVERY_BYTES || !collectYoung) return;
  copiedSinceCollect = 0;
  collectYoung();
}

export class BodyReader {
  private queue: Array<[Buffer, boolean]> = [];
  private queued = 0;
  private sink?: (chunk: Buffer, isLast: boolean) => void;
  private paused = false;
  /** True once the last chunk has arrived. */
  complete = false;
  /** This module's list of readers resting (rest()): since when, and its links. */
  restedAt = 0;
  restPrev: BodyReader | undefined = undefined;
  restNext: BodyReader | undefined = undefined;

  constructor(private res: HttpResponse, private isAborted: () => boolean) {
    res.onData((chunk, isLast) => {
      // uWS reuses the chunk's memory after this callback returns: copy it.
      const copy = Buffer.copyBytesFrom(new Uint8Array(chunk));
      copied(copy.length);
      if (isLast) {
        this.complete = true;
        // The request is in: unless it is answered first, it is paused a moment later (see
        // REST_MS); the answer resumes the socket (answering).
        rest(this);
      }
      if (this.sink) {
        this.sink(copy, isLast);
        return;
      }
      this.queue.push([copy, isLast]);
      this.queued += copy.length;
      if (this.queued > HOLD_BYTES) this.pause();
    });
  }

  consume(sink: (chunk: Buffer, isLast: boolean) => void): void {
    if (this.sink) throw new Error('the body is read once');
    this.sink = sink;
    const queued = this.queue;
    this.queue = [];
    this.queued = 0;
    for (const [c, last] of queued) sink(c, last);
    this.resume();
  }

  /**
   * Reads the rest of the body into nothing, then calls `then`: uWS closes a connection whose
   * response ended before its request body arrived, so a reply must wait for the drain.
   */
  discard(then: () => void): void {
    if (this.complete && !this.sink) { this.sink = () => {}; this.queue = []; then(); return; }
    if (this.sink) { then(); return; }
    this.consume((_c, isLast) => { if (isLast) then(); });
  }

  pause(): void {
    if (!this.paused && !this.isAborted()) { this.paused = true; this.res.pause(); }
  }

  /** Lets more of the body in (after pause()); once it has all arrived the socket stays paused
   *  (uWS's resume() re-arms its idle timeout) until answering(). */
  resume(): void {
    if (this.complete) return;
    if (this.paused && !this.isAborted()) { this.paused = false; this.res.resume(); }
  }

  /** The response is about to be written (on a live response): the socket must flow again. */
  answering(): void {
    unrest(this);
    if (this.paused) { this.paused = false; this.res.resume(); }
  }
}
