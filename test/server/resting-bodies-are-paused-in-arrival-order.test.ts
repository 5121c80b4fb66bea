// A request whose body has arrived but that is still unanswered a moment later has its socket
// paused (body-reader.ts: the sweep after REST_MS clears uWS's idle timeout for a long wait);
// one answered before then is never paused. The readers wait in a list of their own, in arrival
// order: one answered from the middle of it leaves the others in place, each paused once, and
// answering a paused one resumes its socket. Driven here through a stand-in for uWS's response,
// which counts the pauses and resumes it is asked for.
import t from 'tap';
import type { HttpResponse } from 'uWebSockets.js';
import { BodyReader } from '../../src/server/body-reader.js';

class FakeResponse {
  pauses = 0;
  resumes = 0;
  deliver?: (chunk: ArrayBuffer, isLast: boolean) => void;

  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): this {
    this.deliver = handler;
    return this;
  }

  pause(): void {
    this.pauses++;
  }

  resume(): void {
    this.resumes++;
  }
}

/** A reader whose whole body (one chunk) has arrived. */
function arrived(): { res: FakeResponse; reader: BodyReader } {
  const res = new FakeResponse();
  const reader = new BodyReader(res as unknown as HttpResponse, () => false);
  res.deliver!(new TextEncoder().encode('{"markdown":"# hi"}').buffer, true);
  return { res, reader };
}

/** Waits for `done` (the sweep runs every second); fails past `limitMs` instead of hanging. */
async function until(done: () => boolean, limitMs: number): Promise<boolean> {
  const giveUp = Date.now() + limitMs;
  while (!done() && Date.now() < giveUp) await new Promise((r) => setTimeout(r, 50));
  return done();
}

t.test('unanswered bodies are paused in arrival order; answered ones never', async (t) => {
  const first = arrived();
  const middle = arrived();
  const last = arrived();
  const quick = arrived();
  middle.reader.answering();
  quick.reader.answering();

  t.ok(await until(() => first.res.pauses > 0 && last.res.pauses > 0, 10_000), 'the two still unanswered are paused');
  // One more sweep's worth: nothing is paused twice, and the answered ones never.
  await new Promise((r) => setTimeout(r, 1_200));
  t.equal(first.res.pauses, 1, 'the first paused once');
  t.equal(last.res.pauses, 1, 'the last paused once');
  t.equal(middle.res.pauses, 0, 'the one answered from the middle of the list is not paused');
  t.equal(quick.res.pauses, 0, 'nor the one answered at its end');
  t.equal(middle.res.resumes, 0, 'and not resumed either: its socket was never paused');

  first.reader.answering();
  t.equal(first.res.resumes, 1, 'answering a paused one resumes its socket');

  // The list is empty now; a reader resting after that is paused in its turn.
  const later = arrived();
  t.ok(await until(() => later.res.pauses > 0, 10_000), 'a body that arrives after the list emptied is paused too');
  later.reader.answering();
  last.reader.answering();
  t.equal(later.res.resumes, 1);
  t.equal(last.res.resumes, 1);
});
