// What the text and HTML outputs keep of the Markdown, as a user reads them through the API:
// page markers stay HTML comments in HTML, and link targets stay in plain text.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { MODES, startWorld } from '../helpers/world.js';
import { buildManyPagesPdf } from '../fixtures/build/pdf.js';

interface Conv { files: Array<{ role: string; format?: string; content?: string }> }

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-outputs-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const w = await startWorld(MODES[0]!);
t.teardown(() => w.close());

const output = (c: Conv, format: string): string => c.files.find((f) => f.role === 'output' && f.format === format)?.content ?? '';

t.test('the HTML output of a PDF keeps its page markers as HTML comments', async (t) => {
  const pdf = await buildManyPagesPdf(dir, 2);
  const fd = new FormData();
  fd.append('formats', 'markdown,html');
  fd.append('file', new File([readFileSync(pdf)], 'two.pdf', { type: 'application/pdf' }));
  const res = await w.req('POST', '/v1/convert/pdf', { key: w.key, body: fd });
  t.equal(res.status, 200);
  const html = output(await res.json() as Conv, 'html');
  t.match(html, '<!-- page 1 -->');
  t.match(html, '<!-- page 2 -->');
  t.notMatch(html, '&lt;!--', 'not shown as text');
  t.match(html, 'Page 2 body text');
});

t.test('raw HTML in Markdown is still escaped; a comment alone on its line that cannot close early stays a comment', async (t) => {
  const markdown = '<!-- page 2 --><script>x</script>\n\n<!-- hidden row 3 skipped -->\n\n<!-- a -- b -->\n\n<!-- x > y -->';
  const res = await w.req('POST', '/v1/convert/markdown/html', { key: w.key, json: { markdown } });
  const html = output(await res.json() as Conv, 'html');
  t.notMatch(html, '<script>', 'a comment followed by a tag on its line is text');
  t.match(html, '&lt;!-- page 2 --&gt;&lt;script&gt;');
  t.match(html, '<!-- hidden row 3 skipped -->', 'a converter\'s note stays a comment');
  t.match(html, '&lt;!-- a -- b --&gt;', 'a comment with -- inside is text');
  t.match(html, '&lt;!-- x &gt; y --&gt;', 'and one with > inside');
});

t.test('equations pass through the HTML and text outputs as TeX, money stays money', async (t) => {
  const markdown = 'For $\\{x\\} = a_1 * b_2$ it costs $5 and $10.\n\n$$\\sum_{i=1}^{n} i \\\\ x$$';
  const res = await w.req('POST', '/v1/convert/markdown/html', { key: w.key, json: { markdown, formats: ['html', 'text'] } });
  const c = await res.json() as Conv;
  const html = output(c, 'html');
  t.match(html, '<span class="math inline">\\(\\{x\\} = a_1 * b_2\\)</span>', 'escapes and emphasis inside $…$ are left alone');
  t.match(html, '<span class="math display">\\[\\sum_{i=1}^{n} i \\\\ x\\]</span>');
  t.match(html, 'it costs $5 and $10.', 'dollars with a space inside are not math');
  t.match(output(c, 'text'), 'For $\\{x\\} = a_1 * b_2$ it costs $5 and $10.', 'the text output keeps the TeX as written');
});

t.test('Markdown to text keeps link targets unless the text is the address', async (t) => {
  const markdown = 'See [the docs](http://x.y/docs), <https://a.b/c> and [mail us](mailto:hi@x.y); [anchor](#part-2).';
  const res = await w.req('POST', '/v1/convert/markdown/text', { key: w.key, json: { markdown } });
  t.equal(res.status, 200);
  const text = output(await res.json() as Conv, 'text');
  t.match(text, 'See the docs (http://x.y/docs), https://a.b/c and mail us (mailto:hi@x.y); anchor.');
});

t.test('source files carry no format or variant; outputs carry both', async (t) => {
  const res = await w.req('POST', '/v1/convert/text', { key: w.key, json: { text: 'plain words', formats: ['markdown', 'text'] } });
  const c = await res.json() as { files: Array<Record<string, unknown>> };
  const source = c.files.find((f) => f.role === 'source')!;
  t.notOk('format' in source, 'no format on the source');
  t.notOk('variant' in source, 'no variant on the source');
  for (const f of c.files.filter((x) => x.role === 'output')) t.match(f, { format: /^(markdown|text)$/, variant: 'standard' });
});
