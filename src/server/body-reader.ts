// What holds a request's body from the moment uWS starts delivering it until a reader (body.ts,
// read-to-file.ts) consumes it. The request context (respond.ts) makes one per request.
import type { HttpResponse } from 'uWebSockets.js';

/**
 * uWS delivers a body only to an onData handler attached before the route handler returns,
 * but our handlers authenticate first. So every request that may carry a body gets one of
 * these at once: it holds what arrives (pausing the socket past HOLD_BYTES) until a reader
 * consumes it. (Pausing every request up front breaks keep-alive connections in this uWS build.)
 */
const HOLD_BYTES = 1024 * 1024;

export class BodyReader {
  private queue: Array<[Buffer, boolean]> = [];
  private queued = 0;
  private sink?: (chunk: Buffer, isLast: boolean) => void;
  private paused = false;
  /** True once the last chunk has arrived. */
  complete = false;

  constructor(private res: HttpResponse, private isAborted: () => boolean) {
    res.onData((chunk, isLast) => {
      // uWS reuses the chunk's memory after this callback returns: copy it.
      const copy = Buffer.copyBytesFrom(new Uint8Array(chunk));
      if (isLast) {
        this.complete = true;
        // The request is in: pausing clears uWS's idle timeout (10 s), which would otherwise cut
        // a request still waiting for its conversion. The answer resumes the socket (answering).
        this.pause();
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
    if (this.paused) { this.paused = false; this.res.resume(); }
  }
}
