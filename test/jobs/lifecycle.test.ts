import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HeldExecutor, startWorld, storeModes } from '../helpers/world.js';
import { PoolExecutor, type PoolTask } from '../../src/pool/pool.js';
import type { Executor } from '../../src/jobs/executor.js';
import { buildManyPagesPdf } from '../fixtures/build/pdf.js';

interface Conv { id: string; status: string; async_reason: string | null; files: Array<{ role: string; name: string; status: string; error: { error: string; detail: string } | null; content: string | null; progress?: { pages_done: number } }>; usage: { credits_reserved: number; credits_charged: number; credits_remaining: number | null } }

async function until(w: { req: (m: string, p: string) => Promise<Response> }, id: string, pred: (c: Conv) => boolean, ms = 20_000): Promise<Conv> {
  const end = Date.now() + ms;
  for (;;) {
    const c = await (await w.req('GET', `/v1/conversions/${id}`)).json() as Conv;
    if (pred(c) || Date.now() > end) return c;
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const mode of storeModes()) {
  t.test(`the conversion lifecycle (${mode})`, async (t) => {
    const held = new HeldExecutor();
    const w = await startWorld(mode, {}, { executor: held });
    t.teardown(() => w.close());

    await t.test('wait=0 answers 202 at once and the work completes later', async (t) => {
      held.hold();
      const res = await w.req('POST', '/v1/convert/text?wait=0', { json: { text: 'slow words' } });
      t.equal(res.status, 202);
      const c = await res.json() as Conv;
      t.equal(c.async_reason, 'respond_async');
      // This process's runner claimed the job in the conversion's insert and starts it right
      // after the commit: the rows were stored running, and the answer shows them as stored.
      t.equal(c.status, 'running', 'stored running in its insert');
      t.equal(c.files[0]!.status, 'running', 'and its source too');
      const live = await until(w, c.id, (x) => x.files[0]!.status === 'running');
      t.equal(live.status, 'running', 'GET shows the conversion running');
      t.match(live.files[0], { role: 'source', status: 'running', progress: { pages_done: 0 } }, 'and its source with progress');
      held.release();
      const done = await until(w, c.id, (x) => x.status === 'completed');
      t.equal(done.status, 'completed');
      t.match(done.files.find((f) => f.role === 'output')!.content, 'slow words');
    });

    await t.test('work that outlasts the window answers 202 wait_timeout and goes on', async (t) => {
      held.hold();
      const t0 = performance.now();
      const res = await w.req('POST', '/v1/convert/text?wait=1', { json: { text: 'outlasts' } });
      t.equal(res.status, 202);
      t.ok(performance.now() - t0 >= 900, 'it waited the window');
      const c = await res.json() as Conv;
      t.equal(c.async_reason, 'wait_timeout');
      held.release();
      t.equal((await until(w, c.id, (x) => x.status === 'completed')).status, 'completed');
    });

    await t.test('a full pool answers 202 capacity at once while Markdown rendering still answers 200', async (t) => {
      held.hold();
      const first = await w.req('POST', '/v1/convert/text?wait=0', { json: { text: 'one' } });
      t.equal(first.status, 202);
      for (let i = 0; i < 1500 && held.waitingTasks === 0; i++) await new Promise((r) => setTimeout(r, 20));
      t.ok(held.saturated(), 'the pool is saturated');
      const second = await w.req('POST', '/v1/convert/text?wait=30', { json: { text: 'two' } });
      t.equal(second.status, 202);
      const c2 = await second.json() as Conv;
      t.equal(c2.async_reason, 'capacity', 'capacity, not wait_timeout: it did not wait the 30 s window');
      t.equal(c2.status, 'queued', 'its job left for any runner once there is room: stored queued');
      t.equal(c2.files[0]!.status, 'queued');
      t.ok(held.saturated(), 'answered while the pool is still full');
      const md = await w.req('POST', '/v1/convert/markdown/html', { json: { markdown: '# quick' } });
      t.equal(md.status, 200);
      t.match(await md.text(), '<h1>quick</h1>');
      t.ok(held.saturated(), 'Markdown → HTML answered while the documents still hold the pool: not queued behind them');
      held.release();
      const done = await until(w, c2.id, (x) => x.status === 'completed');
      t.equal(done.status, 'completed', 'the queued conversion is picked up once there is room');
    });

    await t.test('more than 10 sources answer 202 too_many_sources; 10 answer 200', async (t) => {
      const ten = await w.req('POST', '/v1/convert/text', { json: { texts: Array.from({ length: 10 }, (_, i) => `t${i}`) } });
      t.equal(ten.status, 200);
      const eleven = await w.req('POST', '/v1/convert/text', { json: { texts: Array.from({ length: 11 }, (_, i) => `t${i}`) } });
      t.equal(eleven.status, 202);
      const c = await eleven.json() as Conv;
      t.equal(c.async_reason, 'too_many_sources');
      t.equal((await until(w, c.id, (x) => x.status === 'completed')).status, 'completed');
    });

    await t.test('more than 50 PDF pages answer 202 pages_exceed_sync_limit; 50 answer 200', async (t) => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pages-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      const send = async (pages: number) => {
        const file = await buildManyPagesPdf(dir, pages, `p${pages}.pdf`);
        const fd = new FormData();
        fd.append('file', new Blob([(await import('node:fs')).readFileSync(file)]), `p${pages}.pdf`);
        fd.append('quality', 'fast');
        return w.req('POST', '/v1/convert/pdf', { body: fd });
      };
      const fifty = await send(50);
      t.equal(fifty.status, 200);
      const more = await send(51);
      t.equal(more.status, 202);
      t.equal((await more.json() as Conv).async_reason, 'pages_exceed_sync_limit');
    });

    await t.test('DELETE of a running conversion frees its credits', async (t) => {
      const before = await w.app.deps.gate.balance(w.accountId);
      held.hold();
      const res = await w.req('POST', '/v1/convert/text?wait=0', { json: { text: 'to be deleted' } });
      const c = await res.json() as Conv;
      t.equal(c.usage.credits_reserved, 1);
      t.equal(await w.app.deps.gate.balance(w.accountId), before! - 1, 'reserved while running');
      const del = await w.req('DELETE', `/v1/conversions/${c.id}`);
      t.equal(del.status, 200);
      held.release();
      t.equal(await w.app.deps.gate.balance(w.accountId), before, 'the reservation came back');
      const [l] = await w.db.sql`select coalesce(sum(amount), 0)::int as n from ledger where conversion_id = ${c.id}`;
      t.equal(l!.n, 0, 'the ledger nets to zero for it');
    });

    await t.test('the SSE stream delivers progress and a final event', async (t) => {
      held.hold();
      const c = await (await w.req('POST', '/v1/convert/text?wait=0', { json: { texts: ['a', 'b'] } })).json() as Conv;
      const res = await w.req('GET', `/v1/conversions/${c.id}/events`);
      t.equal(res.status, 200);
      t.match(res.headers.get('content-type'), 'text/event-stream');
      setTimeout(() => held.release(), 300);
      const text = await res.text();
      const events = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
      t.ok(events.includes('progress'), 'progress events');
      t.equal(events[events.length - 1], 'done', 'ends with done');
      const last = /event: done\ndata: (.*)\n/.exec(text)!;
      t.equal((JSON.parse(last[1]!) as Conv).status, 'completed');
    });
  });
}

t.test('a converter that throws, hangs or allocates without bound fails only its own file', async (t) => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'docpipe-bad-'));
  // The hang reaches the limit; the good file must not, though a thread's first conversion
  // (loading the converters) can take seconds on a loaded machine.
  const pool = new PoolExecutor({ tmpDir: tmp, allowPrivateNetwork: false }, { threads: 2, taskTimeoutMs: 10_000, heapMb: 64, allowTestModules: true });
  const fixtures = path.resolve('test/pool/fixtures');
  const modules: Record<string, string> = {
    'throws.txt': path.join(fixtures, 'throws.ts'),
    'hang.txt': path.join(fixtures, 'hang.ts'),
    'hog.txt': path.join(fixtures, 'hog.ts'),
  };
  const exec: Executor = {
    run: (task, signal, p) => pool.run({ ...task, testModule: modules[task.name] } as PoolTask, signal, p),
    queued: () => pool.queued(),
    close: () => pool.close(),
  };
  const w = await startWorld('postgres', {}, { executor: exec });
  t.teardown(async () => { await w.close(); rmSync(tmp, { recursive: true, force: true }); });
  for (const bad of Object.keys(modules)) {
    const fd = new FormData();
    fd.append('file', new Blob(['fine words']), 'good.txt');
    fd.append('file', new Blob(['whatever']), bad);
    // The longest window: the first task also starts the pool's threads, slow on a busy machine.
    const res = await w.req('POST', '/v1/convert/text?wait=60', { body: fd });
    t.equal(res.status, 200, bad);
    const c = await res.json() as Conv;
    t.equal(c.status, 'completed_with_errors', `${bad}: completed_with_errors`);
    const failed = c.files.find((f) => f.role === 'source' && f.status === 'failed')!;
    t.equal(failed.name, bad);
    t.equal(failed.error!.error, 'invalid_document');
    t.equal(c.usage.credits_charged, 1, 'only the good file is charged');
  }
  const ok = await w.req('POST', '/v1/convert/text', { json: { text: 'still serving' } });
  t.equal(ok.status, 200, 'the server keeps serving');
});
