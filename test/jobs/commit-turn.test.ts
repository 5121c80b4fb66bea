// The acceptor threads' group commits take turns (jobs/commit-turn.ts): one transaction at a
// time per process, first come first served, across threads; a turn that never comes back (a
// thread that died holding it) is taken anyway after a stall. Shown on the lock itself, across a
// real worker thread, and on two group commits sharing one turn over a real database, where the
// second batch's transaction starts only after the first one's ended (and without the shared
// turn it starts while the first is still open).
import t from 'tap';
import { Worker } from 'node:worker_threads';
import { CommitTurn, commitTurnBuffer } from '../../src/jobs/commit-turn.js';
import { GroupCommit, type GroupedConversion } from '../../src/jobs/group-commit.js';
import type { ConversionRow } from '../../src/store/conversions.js';
import type { Sql } from '../../src/store/db.js';
import { startWorld, storeModes } from '../helpers/world.js';

/** Lets every pending callback and promise run a few times over. */
async function settleLoop(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

t.test('turns are taken one at a time, in the order they were asked for', async (t) => {
  const buffer = commitTurnBuffer();
  // One CommitTurn per would-be thread, all on the same memory.
  const [a, b, c] = [new CommitTurn(buffer), new CommitTurn(buffer), new CommitTurn(buffer)];
  const order: string[] = [];
  t.equal(await a.take(), false, 'a free turn: taken without waiting');
  order.push('a');
  const bTurn = b.take().then((waited) => { order.push('b'); return waited; });
  const cTurn = c.take().then((waited) => { order.push('c'); return waited; });
  await settleLoop();
  t.same(order, ['a'], 'b and c wait while a holds the turn');
  a.release();
  t.equal(await bTurn, true, 'b says it waited');
  await settleLoop();
  t.same(order, ['a', 'b'], 'b, which asked first, goes next; c still waits');
  b.release();
  t.equal(await cTurn, true, 'c says it waited');
  t.same(order, ['a', 'b', 'c']);
  c.release();
  t.equal(await a.take(), false, 'a free turn is taken at once');
  a.release();
});

t.test('the tickets keep their order where the counters wrap around', async (t) => {
  const buffer = commitTurnBuffer();
  const cells = new Int32Array(buffer);
  cells[0] = 2 ** 31 - 1; // the next ticket is the largest Int32; the one after it wraps
  cells[1] = 2 ** 31 - 1;
  const [a, b] = [new CommitTurn(buffer), new CommitTurn(buffer)];
  const order: string[] = [];
  await a.take();
  order.push('a');
  const bTurn = b.take().then(() => { order.push('b'); });
  await settleLoop();
  t.same(order, ['a'], 'the wrapped ticket waits for its turn');
  a.release();
  await bTurn;
  t.same(order, ['a', 'b']);
  t.equal(cells[1], -(2 ** 31), 'the counter wrapped');
  b.release();
});

t.test('a turn held by a thread that never gives it back is taken after the stall', async (t) => {
  const buffer = commitTurnBuffer();
  // A pending Atomics.waitAsync does not keep the event loop alive (a server's sockets do).
  const alive = setInterval(() => {}, 1_000);
  t.teardown(() => clearInterval(alive));
  const dead = new CommitTurn(buffer, 20);
  const waiter = new CommitTurn(buffer, 20);
  await dead.take(); // and never released
  await waiter.take();
  t.pass('the waiter went on');
  waiter.release();
  const again = new CommitTurn(buffer, 20);
  await again.take();
  t.pass('and the turns go on after it');
  again.release();
});

t.test('a turn held in another thread is waited for, and taken when that thread releases it', async (t) => {
  const buffer = commitTurnBuffer();
  const mine = new CommitTurn(buffer);
  const moduleUrl = new URL('../../src/jobs/commit-turn.ts', import.meta.url).href;
  // The worker holds the turn until told to let go.
  const worker = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads');
    (async () => {
      const { register } = await import('tsx/esm/api');
      register();
      const { CommitTurn } = await import(workerData.moduleUrl);
      const turn = new CommitTurn(workerData.buffer);
      await turn.take();
      parentPort.postMessage('held');
      parentPort.once('message', () => { turn.release(); parentPort.postMessage('released'); });
    })();
  `, { eval: true, workerData: { buffer, moduleUrl } });
  t.teardown(() => worker.terminate());
  const events: string[] = [];
  worker.on('message', (m: string) => events.push(`worker ${m}`));
  while (!events.includes('worker held')) await new Promise((r) => setTimeout(r, 10));
  const taken = mine.take().then(() => { events.push('main took'); });
  await settleLoop();
  t.same(events, ['worker held'], 'the main thread waits while the worker holds the turn');
  worker.postMessage('go');
  await taken;
  t.same(events.filter((e) => e !== 'worker released'), ['worker held', 'main took']);
  mine.release();
});

/** A finished render as persist builds it. */
function render(id: string, accountId: string): GroupedConversion {
  const now = new Date();
  const row: ConversionRow = {
    id, account_id: accountId, name: 'a.md', endpoint: 'markdown/html', operation: 'render', status: 'completed',
    async_reason: null, options: {}, metadata: null, store: false, credits_reserved: 0, credits_charged: 0,
    created_at: now, completed_at: now, expires_at: null,
  };
  return {
    row,
    files: [{ id: `${id}_src`, position: 0, role: 'source', name: 'a.md', mime: 'text/markdown', status: 'completed', bytes: 10, pages: 1, credits: 0, content: `# ${id}` }],
    monthlyFiles: 1, monthlyLimit: 1000,
  };
}

/**
 * The world's client as one group commit sees it: each transaction it opens (a reserved
 * connection) is logged when it starts and when it ends, and the first one of `held` waits for
 * `open` before it starts.
 */
function logged(sql: Sql, name: string, log: string[], held?: Promise<void>): Sql {
  let first = true;
  return new Proxy(sql, {
    get(target, prop, receiver) {
      if (prop !== 'reserve') return Reflect.get(target, prop, receiver);
      return async () => {
        log.push(`${name} begins`);
        if (held && first) await held;
        first = false;
        const reserved = await target.reserve();
        return new Proxy(reserved, {
          get(r, p, rr) {
            if (p !== 'release') return Reflect.get(r, p, rr);
            return () => { log.push(`${name} ends`); r.release(); };
          },
        });
      };
    },
  }) as Sql;
}

for (const mode of storeModes()) {
  for (const shared of [true, false]) {
    t.test(`${mode}: two group commits ${shared ? 'sharing a turn commit one after the other' : 'without a shared turn overlap'}`, async (t) => {
      const w = await startWorld(mode);
      t.teardown(() => w.close());
      const buffer = commitTurnBuffer();
      const log: string[] = [];
      let open!: () => void;
      const held = new Promise<void>((r) => { open = r; });
      const first = new GroupCommit(logged(w.db.sql, 'first', log, held), shared ? new CommitTurn(buffer) : undefined);
      const second = new GroupCommit(logged(w.db.sql, 'second', log), shared ? new CommitTurn(buffer) : undefined);
      const one = first.add(render('conv_t1', w.accountId));
      await settleLoop();
      const two = second.add(render('conv_t2', w.accountId));
      await settleLoop();
      if (shared) t.same(log, ['first begins'], 'the second batch waits for the first one\'s turn');
      else t.same(log.slice(0, 2), ['first begins', 'second begins'], 'the second batch starts while the first is open');
      open();
      await Promise.all([one, two]);
      if (shared) {
        t.same(log, ['first begins', 'first ends', 'second begins', 'second ends']);
        t.equal(first.stats.turnWaits, 0, 'the first batch found the turn free');
        t.equal(second.stats.turnWaits, 1, 'the second batch found it taken, and its wait is counted');
      } else {
        t.same([first.stats.turnWaits, second.stats.turnWaits, second.stats.turnWaitMs], [0, 0, 0], 'without a turn there is none to wait for');
      }
      t.ok(first.stats.committingMs > 0 && second.stats.committingMs > 0, 'each batch\'s time from taken to settled is counted');
      const rows = await w.db.sql`select id from conversions where id in ('conv_t1', 'conv_t2') order by id`;
      t.same(rows.map((r) => r.id), ['conv_t1', 'conv_t2'], 'both stored');
    });
  }
}
