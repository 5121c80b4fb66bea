import t from 'tap';
import { oneMode, PROBLEM_FIELDS, startWorld } from '../helpers/world.js';

interface FileJ { id: string; role: string; format: string | null; content: string | null; name: string; status: string | null; outputs?: Array<{ id: string; format: string }> }
interface ConvJ { id: string; object: string; status: string; operation: string; name: string; files: FileJ[]; metadata: unknown; summary: Record<string, number>; usage: Record<string, unknown>; created_at: string; completed_at: string | null; async_reason: string | null }

const outputs = (c: ConvJ, format: string) => c.files.filter((f) => f.role === 'output' && f.format === format);

for (const mode of oneMode()) {
  t.test(`first conversions (${mode})`, async (t) => {
    const w = await startWorld(mode, {}, { pool: true });
    t.teardown(() => w.close());

    await t.test('markdown to HTML renders GFM and escapes raw HTML', async (t) => {
      const md = '# Title\n\nSome **bold** and a [link](https://example.com).\n\n<script>alert(1)</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n[x](javascript:alert(1))\n';
      const res = await w.req('POST', '/v1/convert/markdown/html', { json: { markdown: md, metadata: { order: 7, tags: ['a'] } } });
      t.equal(res.status, 200);
      const c = await res.json() as ConvJ;
      t.equal(c.object, 'conversion');
      t.equal(c.operation, 'render');
      t.equal(c.status, 'completed');
      t.ok(c.completed_at);
      t.same(c.metadata, { order: 7, tags: ['a'] }, 'metadata returned unchanged');
      t.same(c.summary, { sources: 1, queued: 0, running: 0, completed: 1, failed: 0 });
      t.same(c.usage, { credits_reserved: 0, credits_charged: 0, credits_remaining: c.usage.credits_remaining });
      const [html] = outputs(c, 'html');
      t.ok(html, 'an html output');
      t.match(html!.content, '<h1>Title</h1>');
      t.match(html!.content, '<strong>bold</strong>');
      t.match(html!.content, '<a href="https://example.com">link</a>');
      t.match(html!.content, '<table>');
      t.match(html!.content, '&lt;script&gt;');
      t.notMatch(html!.content, '<script>');
      t.notMatch(html!.content, 'javascript:');
    });

    await t.test('markdown to text drops the markup and keeps the words', async (t) => {
      const res = await w.req('POST', '/v1/convert/markdown/text', { json: { text: '## Heading\n\n- one *item*\n- two\n\n`code` and [a link](https://x.y)' } });
      t.equal(res.status, 200);
      const c = await res.json() as ConvJ;
      const [txt] = outputs(c, 'text');
      t.equal(txt!.content, 'Heading\n\n- one item\n- two\n\ncode and a link (https://x.y)\n', 'the link keeps its target');
    });

    await t.test('text converts several texts with every requested format', async (t) => {
      const res = await w.req('POST', '/v1/convert/text', { json: { texts: ['first *doc*\r\nline two', 'second'], formats: ['markdown', 'text', 'html'] } });
      t.equal(res.status, 200);
      const c = await res.json() as ConvJ;
      t.equal(c.summary.sources, 2);
      t.equal(outputs(c, 'markdown').length, 2);
      t.equal(outputs(c, 'markdown')[0]!.content, 'first *doc*\nline two\n', 'newlines normalised, markdown characters kept');
      t.equal(outputs(c, 'text')[0]!.content, 'first doc\nline two\n');
      t.match(outputs(c, 'html')[1]!.content, '<p>second</p>');
      const src = c.files.filter((f) => f.role === 'source');
      t.equal(src.length, 2);
      t.same(src[0]!.outputs!.map((o) => o.format), ['markdown', 'text', 'html']);
    });

    await t.test('html converts tables, links and drops scripts', async (t) => {
      const html = '<html><head><script>var secret=1</script></head><body><h2>Report</h2><table><tr><th>Name</th><th>Qty</th></tr><tr><td>Pen</td><td>3</td></tr></table><p>See <a href="/docs">docs</a></p></body></html>';
      const res = await w.req('POST', '/v1/convert/html', { json: { html, base_url: 'https://example.org/a/' } });
      t.equal(res.status, 200);
      const c = await res.json() as ConvJ;
      const md = outputs(c, 'markdown')[0]!.content!;
      t.match(md, '## Report');
      t.match(md, '| Name | Qty |');
      t.match(md, '| Pen | 3 |');
      t.match(md, '[docs](https://example.org/docs)');
      t.notMatch(md, 'secret');
    });

    await t.test('a multipart file converts and is listed by name', async (t) => {
      const fd = new FormData();
      fd.append('file', new Blob(['Hello from a *file*\n']), 'notes.txt');
      fd.append('formats', 'markdown,html');
      fd.append('metadata', JSON.stringify({ k: 'v' }));
      const res = await w.req('POST', '/v1/convert/text', { body: fd });
      t.equal(res.status, 200);
      const c = await res.json() as ConvJ;
      t.same(c.metadata, { k: 'v' });
      const src = c.files.find((f) => f.role === 'source')!;
      t.equal(src.name, 'notes.txt');
      t.equal(outputs(c, 'markdown')[0]!.name, 'notes.md');
      t.equal(outputs(c, 'markdown')[0]!.content, 'Hello from a *file*\n');
      t.match(outputs(c, 'html')[0]!.content, '<em>file</em>');

      const again = await w.req('GET', `/v1/conversions/${c.id}`);
      t.equal(again.status, 200);
      const c2 = await again.json() as ConvJ;
      t.same(c2.files.map((f) => f.content), c.files.map((f) => f.content), 'GET shows the same files and contents');

      const dl = await w.req('GET', `/v1/conversions/${c.id}/files/${outputs(c, 'html')[0]!.id}/content`);
      t.equal(dl.status, 200);
      t.match(dl.headers.get('content-type'), 'text/html');
      t.match(await dl.text(), '<em>file</em>');
    });

    await t.test('a binary file sent to /text is refused with 415 input_format_mismatch', async (t) => {
      const fd = new FormData();
      fd.append('file', new Blob([Buffer.from([0x25, 0x50, 0x44, 0x46, 0, 1, 2, 0, 0])]), 'x.txt');
      const res = await w.req('POST', '/v1/convert/text', { body: fd });
      t.equal(res.status, 415);
      t.equal((await res.json() as { error: string }).error, 'input_format_mismatch');
    });

    await t.test('a PDF sent to /word is refused with 415 naming the endpoint to use', async (t) => {
      const fd = new FormData();
      fd.append('file', new Blob([Buffer.from('%PDF-1.7\n1 0 obj\n<<>>\nendobj\n%%EOF\n')], { type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' }), 'letter.docx');
      const res = await w.req('POST', '/v1/convert/word', { body: fd });
      t.equal(res.status, 415);
      const p = await res.json() as { error: string; detail: string };
      t.equal(p.error, 'input_format_mismatch');
      t.match(p.detail, 'Word');
      const list = await (await w.req('GET', '/v1/conversions?limit=100')).json() as { data: Array<{ name: string }> };
      t.notOk(list.data.some((c) => c.name === 'word'), 'no conversion was created');
    });

    await t.test('bad requests get a 400 naming what is wrong', async (t) => {
      const cases: Array<[unknown, RegExp]> = [
        [{ texts: 'x' }, /texts/],
        [{ text: 'x', formats: ['pdf'] }, /formats/],
        [{ text: 'x', bogus: 1 }, /bogus/],
        [{ text: 'x', metadata: [1] }, /metadata/],
        [{}, /source/i],
      ];
      for (const [body, re] of cases) {
        const res = await w.req('POST', '/v1/convert/text', { json: body });
        t.equal(res.status, 400, JSON.stringify(body));
        const p = await res.json() as Record<string, string>;
        t.equal(p.error, 'invalid_request');
        t.match(p.detail, re);
      }
      const raw = await w.req('POST', '/v1/convert/text', { body: '{"text": ', headers: { 'content-type': 'application/json' } });
      t.equal(raw.status, 400);
    });

    await t.test('an unknown conversion id is 404 problem+json', async (t) => {
      const res = await w.req('GET', '/v1/conversions/conv_doesnotexist');
      t.equal(res.status, 404);
      t.match(res.headers.get('content-type'), 'application/problem+json');
      const p = await res.json() as Record<string, unknown>;
      for (const f of PROBLEM_FIELDS) t.ok(f in p, `has ${f}`);
      t.equal(p.error, 'not_found');
      t.equal(p.instance, '/v1/conversions/conv_doesnotexist');
    });

    await t.test('another account cannot see or delete a conversion: 404, never its data', async (t) => {
      const res = await w.req('POST', '/v1/convert/text', { json: { text: 'private words' } });
      const c = await res.json() as ConvJ;
      const other = await w.newKey();
      t.equal((await w.req('GET', `/v1/conversions/${c.id}`, { key: other.key })).status, 404);
      t.equal((await w.req('DELETE', `/v1/conversions/${c.id}`, { key: other.key })).status, 404);
      const list = await (await w.req('GET', '/v1/conversions', { key: other.key })).json() as { data: unknown[] };
      t.equal(list.data.length, 0);
    });

    await t.test('DELETE removes the conversion and its files', async (t) => {
      const c = await (await w.req('POST', '/v1/convert/text', { json: { text: 'bye' } })).json() as ConvJ;
      const del = await w.req('DELETE', `/v1/conversions/${c.id}`);
      t.equal(del.status, 200);
      t.same(await del.json(), { id: c.id, object: 'conversion', deleted: true });
      t.equal((await w.req('GET', `/v1/conversions/${c.id}`)).status, 404);
      const src = c.files.find((f) => f.role === 'source')!;
      t.equal((await w.req('GET', `/v1/conversions/${c.id}/files/${src.id}/content`)).status, 404);
      const [row] = await w.db.sql`select count(*)::int as n from files where conversion_id = ${c.id}`;
      t.equal(row!.n, 0, 'no file rows left');
    });

    await t.test('respond-async answers 202 and the conversion completes', async (t) => {
      const res = await w.req('POST', '/v1/convert/text', { json: { text: 'later' }, headers: { prefer: 'respond-async' } });
      t.equal(res.status, 202);
      const c = await res.json() as ConvJ;
      t.equal(c.async_reason, 'respond_async');
      let status = c.status;
      for (let i = 0; i < 50 && status !== 'completed'; i++) {
        await new Promise((r) => setTimeout(r, 50));
        status = (await (await w.req('GET', `/v1/conversions/${c.id}`)).json() as ConvJ).status;
      }
      t.equal(status, 'completed');
    });
  });
}
