// One group commit at a time per process, whichever acceptor thread's it is. Each acceptor thread
// has its own group commit (group-commit.ts) on its own connections; left alone, two threads'
// batches run side by side in two Postgres backends on the same rows' pages: under scenario A's
// load on 2 cores, two acceptors made batches half as large (13 conversions against 23 with one),
// and Postgres spent 256 µs of CPU per request against 151 with one acceptor, contending for the
// same index pages, the WAL and the account's counter row. Taking turns, each thread's batch
// gathers what arrived while the other's committed, and Postgres sees one transaction at a time,
// as with one acceptor, while the threads still share the HTTP, JSON and rendering work.
//
// The turn is a ticket lock in shared memory: a thread takes the next ticket and waits
// (Atomics.waitAsync, off its event loop) until the counter of the ticket served reaches it; the
// holder advances the counter when its commit is done. First come, first served: a thread that
// commits without pause cannot starve another. The turn only orders commits that would be
// correct side by side (they are today, between processes): a waiter that sees the counter stand
// still for STALL_MS (a thread that died holding the turn or waiting for it, a commit stuck on a
// dead connection) advances it and goes on, and a late release after that only lets one more
// thread through early.

/** Cells of the shared Int32Array. */
const NEXT = 0;
const SERVING = 1;

/** How long a waiter lets the counter stand still before it takes the turn anyway. */
const STALL_MS = 2_000;

/** Atomics.waitAsync (Node.js has it; the ES2023 library this project compiles against does not). */
type WaitAsync = (cells: Int32Array, index: number, value: number, timeoutMs: number)
  => { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

/** Memory the process's threads share for their turns. */
export function commitTurnBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
}

export class CommitTurn {
  private cells: Int32Array;

  constructor(buffer: SharedArrayBuffer, private stallMs = STALL_MS) {
    this.cells = new Int32Array(buffer);
  }

  /** Waits for this thread's turn; call release() once its commit is done. Resolves true when
   *  the turn was another's when asked for (this thread waited), false when it was free. */
  async take(): Promise<boolean> {
    const mine = Atomics.add(this.cells, NEXT, 1);
    for (let waited = false; ; waited = true) {
      const serving = Atomics.load(this.cells, SERVING);
      // Tickets wrap around at 2^31 together with the counter: compare their distance.
      if (((serving - mine) | 0) >= 0) return waited;
      const wait = waitAsync(this.cells, SERVING, serving, this.stallMs);
      const woke = wait.async ? await wait.value : wait.value;
      if (woke === 'timed-out') Atomics.compareExchange(this.cells, SERVING, serving, serving + 1);
    }
  }

  /** Hands the turn to the next ticket. */
  release(): void {
    Atomics.add(this.cells, SERVING, 1);
    Atomics.notify(this.cells, SERVING);
  }
}
