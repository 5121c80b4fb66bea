// Markdown whose render cost grows with the square of its size (long runs of emphasis markers)
// goes to the converter threads, not the event loop: while such a render waits there, a health
// check sent after it is answered first, and the render then completes with marked's own output.
// Small ordinary Markdown keeps the in-request path (no job at all). Both stores.
import t from 'tap';
import { HeldExecutor, oneMode, startWorld } from '../helpers/world.js';
import { markdownToHtml } from '../../src/converters/shared/markdown.js';
import { renderableInline, INLINE_RENDER_BYTES, INLINE_RENDER_DELIMITERS } from '../../src/jobs/context.js';

interface Conv { id: string; status: string; files: Array<{ role: string; format: string | null; content: string | null }> }

const htmlOf = (c: Conv): string | undefined =>
  c.files.find((f) => f.role === 'output' && f.format === 'html')?.content ?? undefined;

t.test('the pre-scan bounds what is rendered in the request', async (t) => {
  t.ok(renderableInline([Buffer.from('# Title\n\nSome *emphasis* and _more_.\n')]), 'ordinary small Markdown stays inline');
  t.notOk(renderableInline([Buffer.from('_a'.repeat(INLINE_RENDER_DELIMITERS + 1))]), 'a long run of markers does not');
  t.notOk(renderableInline([Buffer.from('*a'.repeat(INLINE_RENDER_DELIMITERS / 2 + 1)), Buffer.from('~a'.repeat(INLINE_RENDER_DELIMITERS / 2))]),
    'markers are counted over all sources of a request');
  t.notOk(renderableInline([Buffer.alloc(INLINE_RENDER_BYTES / 2, 'a'), Buffer.alloc(INLINE_RENDER_BYTES / 2 + 1, 'b')]),
    'bytes are counted over all sources of a request');
});

for (const mode of oneMode()) {
  t.test(`a pathological Markdown render does not hold the event loop (${mode})`, async (t) => {
    // The executor stands for the pool here and holds its tasks until released: a render that
    // reaches it is off the event loop, and the health check is answered while it waits.
    const held = new HeldExecutor();
    const w = await startWorld(mode, {}, { executor: held });
    t.teardown(() => w.close());
    // 60 KB of `_a`: about half a second of marked's quadratic work, which on the event loop
    // kept every other request waiting.
    const md = '_a'.repeat(30_000);
    const order: string[] = [];
    held.hold();
    const render = w.req('POST', '/v1/convert/markdown/html', { json: { markdown: md } })
      .then(async (r) => { order.push('render'); return { status: r.status, body: await r.json() as Conv }; });
    // Bounded only for a hang: the render reaches the executor, or was rendered in the request.
    for (let i = 0; i < 600 && held.waitingTasks === 0 && order.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    t.equal(held.waitingTasks, 1, 'the render went to the converter threads');
    const health = await w.req('GET', '/healthz', { key: null });
    order.push('healthz');
    t.equal(health.status, 200, 'the health check is answered');
    held.release();
    const rendered = await render;
    t.same(order, ['healthz', 'render'], 'the health check is answered before the render');
    t.equal(rendered.status, 200);
    t.equal(rendered.body.status, 'completed');
    t.equal(htmlOf(rendered.body), markdownToHtml(md), 'the render is marked\'s own output');

    const small = await w.req('POST', '/v1/convert/markdown/html', { json: { markdown: '# Title\n\nSome *emphasis*.' } });
    t.equal(small.status, 200);
    const c = await small.json() as Conv;
    t.match(htmlOf(c), '<h1>Title</h1>');
    const [{ n }] = await w.db.sql<Array<{ n: number }>>`select count(*)::int as n from jobs where conversion_id = ${c.id}`;
    t.equal(n, 0, 'small ordinary Markdown is rendered in the request, with no job');
  });
}
