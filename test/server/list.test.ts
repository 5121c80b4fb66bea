import t from 'tap';
import { oneMode, startWorld } from '../helpers/world.js';

for (const mode of oneMode()) {
  t.test(`listing conversions (${mode})`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    const made: string[] = [];
    for (let i = 0; i < 23; i++) {
      const res = await w.req('POST', '/v1/convert/markdown/text', { json: { text: `doc ${i}` } });
      made.push((await res.json() as { id: string }).id);
    }

    await t.test('pages through every conversion newest first with no duplicates or gaps', async (t) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const q: string = cursor ? `?limit=5&cursor=${encodeURIComponent(cursor)}` : '?limit=5';
        const res = await w.req('GET', `/v1/conversions${q}`);
        t.equal(res.status, 200);
        const body = await res.json() as { object: string; data: Array<{ id: string; created_at: string }>; next_cursor: string | null };
        t.equal(body.object, 'list');
        t.ok(body.data.length <= 5);
        seen.push(...body.data.map((c) => c.id));
        cursor = body.next_cursor;
        pages++;
      } while (cursor && pages < 20);
      t.equal(pages, 5);
      t.equal(new Set(seen).size, seen.length, 'no duplicates');
      t.same([...seen].sort(), [...made].sort(), 'no gaps');
      t.same(seen, [...made].reverse(), 'newest first');
    });

    await t.test('the default page is 20 and limit is bounded', async (t) => {
      const body = await (await w.req('GET', '/v1/conversions')).json() as { data: unknown[]; next_cursor: string | null };
      t.equal(body.data.length, 20);
      t.ok(body.next_cursor);
      for (const bad of ['0', '101', 'x', '2.5']) {
        const res = await w.req('GET', `/v1/conversions?limit=${bad}`);
        t.equal(res.status, 400, `limit=${bad}`);
      }
      t.equal((await w.req('GET', '/v1/conversions?cursor=garbage')).status, 400);
    });

    await t.test('list entries leave file contents out', async (t) => {
      const body = await (await w.req('GET', '/v1/conversions?limit=1')).json() as { data: Array<{ files: Array<{ content: unknown; role: string }> }> };
      const out = body.data[0]!.files.find((f) => f.role === 'output')!;
      t.equal(out.content, null);
    });
  });
}
