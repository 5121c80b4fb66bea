// An acceptor thread decides whether a submit waits for capacity from the pool's state that the
// main thread keeps in shared memory (acceptor-link.ts, AcceptorHub.follow). It must be written as
// the pool changes, not on a timer: a submit right after the pool filled would otherwise be
// started behind it, and one right after it drained would be kept waiting. And it stops being
// written when the hub stops following (the server stopping).
import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { MessageChannel } from 'node:worker_threads';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { PoolExecutor, type PoolTask } from '../../src/pool/pool.js';
import { AcceptorHub, AcceptorLink, poolStateBuffer } from '../../src/server/acceptor-link.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pool-state-'));
mkdirSync(path.join(dir, 'scratch'));
const release = path.join(dir, 'release');
let n = 0;
/** A task that keeps its thread until the test writes `release`. */
function held(): PoolTask {
  const file = path.join(dir, `doc-${++n}`);
  writeFileSync(file, JSON.stringify({ until: release }));
  return { kind: 'text', path: file, name: 'held.json', options: { formats: ['markdown'] }, testModule: path.join(here, '../pool/fixtures/counter.ts') };
}

t.test('the acceptors read the pool full as soon as it fills, and free as soon as it drains', async (t) => {
  const pool = new PoolExecutor({ tmpDir: path.join(dir, 'scratch'), allowPrivateNetwork: false },
    { threads: 1, taskTimeoutMs: 600_000, highWaterMark: 1, allowTestModules: true });
  const hub = new AcceptorHub({ executor: pool, wake: () => {}, metrics: async () => [], contentType: 'text/plain' }, poolStateBuffer());
  // A backstop far longer than the test: only the pool's own word can move the state.
  const unfollow = hub.follow(3_600_000);
  const { port1, port2 } = new MessageChannel();
  const acceptor = new AcceptorLink(port1, hub.state);
  t.teardown(async () => {
    unfollow();
    port1.close();
    port2.close();
    await pool.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const never = new AbortController().signal;
  const running = pool.run(held(), never);
  for (let i = 0; i < 3000 && pool.busy() < 1; i++) await sleep(20);
  t.equal(pool.busy(), 1, 'the one thread is busy');
  t.notOk(acceptor.saturated(), 'nothing waits yet: not full');

  const waiting = pool.run(held(), never);
  t.equal(pool.queued(), 1, 'the second task waits for the thread');
  t.ok(acceptor.saturated(), 'the acceptor reads the pool full at once');
  t.equal(acceptor.queued(), 1, 'with the task waiting');

  writeFileSync(release, '');
  await Promise.all([running, waiting]);
  t.equal(pool.queued(), 0);
  t.notOk(acceptor.saturated(), 'and free again as soon as the tasks ended');
  t.equal(acceptor.queued(), 0);

  // Once the hub stops following, the pool's word no longer writes the state.
  unfollow();
  rmSync(release);
  const again = [pool.run(held(), never)];
  for (let i = 0; i < 3000 && pool.busy() < 1; i++) await sleep(20);
  again.push(pool.run(held(), never));
  t.equal(pool.queued(), 1, 'the pool is full again');
  t.notOk(acceptor.saturated(), 'but the state is no longer written');
  writeFileSync(release, '');
  await Promise.all(again);
});
