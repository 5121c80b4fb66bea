// The HTML converter and the shared HTML→Markdown step: a table of vectors (HTML in, strings that
// must and must not appear in the Markdown), then charset, counting, sniffing and cancellation.
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import iconv from 'iconv-lite';
import t from 'tap';
import { ApiError } from '../../src/errors.js';
import { htmlConverter } from '../../src/converters/html.js';
import { htmlToMarkdown } from '../../src/converters/shared/html-to-md.js';
import { convertWith, defaultOptions } from '../helpers/convert-ctx.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-html-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
function fixture(content: string | Buffer): string {
  const file = path.join(dir, `doc-${++n}.html`);
  writeFileSync(file, content);
  return file;
}

interface Vector {
  name: string;
  html: string;
  baseUrl?: string;
  must: string[];
  mustNot?: string[];
}

const page = (body: string, head = ''): string =>
  `<!DOCTYPE html><html><head><meta charset="utf-8"><title>Page title</title>${head}</head><body>${body}</body></html>`;

const vectors: Vector[] = [
  {
    name: 'scripts, styles and page chrome are dropped and the article is kept',
    html: page(`<nav><a href="/">Home</a> | <a href="/about">About us</a></nav>
      <noscript>Enable JavaScript</noscript><template><p>template text</p></template>
      <iframe src="https://ads.example/"></iframe><aside>Sponsored links</aside>
      <main><h1>Article</h1><p>The body text.</p><button>Share this</button>
      <form action="/search"><input name="q" value="query text"><button>Search</button></form></main>
      <footer>Copyright 2024</footer><script>var secret = "script text";</script>`,
    '<style>body { color: red }</style><script src="x.js"></script>'),
    must: ['# Article', 'The body text.'],
    mustNot: ['script text', 'color: red', 'Home', 'About us', 'Enable JavaScript', 'template text', 'Sponsored',
      'Share this', 'Search', 'query text', 'Copyright', 'Page title', 'iframe'],
  },
  {
    name: 'headings become atx headings at their level',
    html: page('<h1>One</h1><h2>Two <em>it</em></h2><h3>Three<br>lines</h3><h6>Six</h6>'),
    must: ['# One\n\n## Two _it_\n\n### Three lines\n\n###### Six'],
    mustNot: ['===', '---'],
  },
  {
    name: 'nested lists keep their nesting with - bullets and numbered items',
    html: page(`<ul><li>one<ul><li>nested <strong>bold</strong></li><li>n2<ol><li>deep</li><li>deeper</li></ol></li></ul></li><li>two</li></ul>
      <ol start="9"><li>nine</li><li>ten<ul><li>under ten</li></ul></li></ol>`),
    must: ['- one\n  - nested **bold**\n  - n2\n    1. deep\n    2. deeper\n- two', '9. nine\n10. ten\n    - under ten'],
    mustNot: ['*   ', '-   '],
  },
  {
    name: 'a table with a thead becomes a GFM table with that header',
    html: page('<table><thead><tr><th>Name</th><th>Qty</th></tr></thead><tbody><tr><td>Apple</td><td>3</td></tr><tr><td>Pear</td><td>5</td></tr></tbody></table>'),
    must: ['| Name | Qty |\n| --- | --- |\n| Apple | 3 |\n| Pear | 5 |'],
    mustNot: ['<table', '<td'],
  },
  {
    name: 'a table without a thead still gets a header row (its first row)',
    html: page('<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2</td></tr></table>'),
    must: ['| a | b |\n| --- | --- |\n| 1 | 2 |'],
    mustNot: ['<table', '<tr'],
  },
  {
    name: 'pipes in cells are escaped, line breaks become <br> and colspans keep the columns aligned',
    html: page('<table><tr><th>k</th><th>v</th><th>w</th></tr><tr><td>a|b</td><td colspan="2"><code>x|y</code></td></tr><tr><td>l1<br>l2</td><td>m</td><td>n</td></tr></table>'),
    must: ['| k | v | w |', '| a\\|b | `x\\|y` |  |', '| l1<br>l2 | m | n |'],
    mustNot: ['| a|b'],
  },
  {
    name: 'a single-cell layout table passes its content through as blocks',
    html: page('<table><tr><td><h2>Inside</h2><p>Layout text.</p></td></tr></table>'),
    must: ['## Inside\n\nLayout text.'],
    mustNot: ['| ', '---'],
  },
  {
    name: 'code blocks are fenced with the language from language-, lang- and highlight- classes',
    html: page(`<pre><code class="language-python">def f():\n    return 1</code></pre>
      <pre class="lang-js"><code>let a = 1;</code></pre>
      <div class="highlight highlight-source-rust"><pre>fn main() {}</pre></div>
      <pre><code>plain\n\n\n\nafter blanks</code></pre>
      <pre><code class="language-md">\`\`\`\ninner fence\n\`\`\`</code></pre>`),
    must: ['```python\ndef f():\n    return 1\n```', '```js\nlet a = 1;\n```', '```rust\nfn main() {}\n```',
      '```\nplain\n\n\n\nafter blanks\n```', '````md\n```\ninner fence\n```\n````'],
  },
  {
    name: 'inline code, emphasis, strikethrough and task lists use GFM syntax',
    html: page('<p>Use <code>npm i</code> <strong>now</strong> <del>later</del></p><ul><li><input type="checkbox" checked> done</li><li><input type="checkbox"> todo</li></ul>'),
    must: ['Use `npm i` **now** ~~later~~', '- [x] done\n- [ ] todo'],
  },
  {
    name: 'relative links and images become absolute against the base URL',
    html: page('<p><a href="other.html">rel</a> <a href="/root">root</a> <a href="//cdn.example.org/x">proto</a> <a href="#sec">frag</a> <img src="img/a b.png" alt="pic"></p>'),
    baseUrl: 'https://example.com/docs/page.html',
    must: ['[rel](https://example.com/docs/other.html)', '[root](https://example.com/root)', '[proto](https://cdn.example.org/x)',
      '[frag](#sec)', '![pic](https://example.com/docs/img/a%20b.png)'],
    mustNot: ['(other.html)'],
  },
  {
    name: 'a <base href> in the document decides where relative links point',
    html: page('<p><a href="guide.html">guide</a></p>', '<base href="https://mirror.example.net/v2/">'),
    baseUrl: 'https://example.com/docs/page.html',
    must: ['[guide](https://mirror.example.net/v2/guide.html)'],
  },
  {
    name: 'without a known base, relative links are left as written and javascript: links lose their target',
    html: page('<p><a href="guide.html">guide</a> <a href="javascript:alert(1)">click</a></p>'),
    must: ['[guide](guide.html)', 'click'],
    mustNot: ['javascript:', '[click]'],
  },
  {
    name: 'entities are decoded',
    html: page('<p>Fish &amp; chips &lt;tag&gt; &copy; 2024 &#x2014; caf&eacute;&nbsp;au&nbsp;lait &#128512;</p>'),
    must: ['Fish & chips <tag> © 2024 — café au lait 😀'],
    mustNot: ['&amp;', '&lt;', '&eacute;', '&nbsp;', '\u00A0'],
  },
  {
    name: 'embedded data: images become a placeholder, never a base64 blob',
    html: page(`<p><img alt="chart" src="data:image/png;base64,${'iVBORw0KGgo'.repeat(100_000)}"></p><p><img src="data:image/gif;base64,R0lGOD" data-src="/lazy.png" alt="lazy"></p>`),
    baseUrl: 'https://example.com/',
    must: ['![chart](#embedded-image)', '![lazy](https://example.com/lazy.png)'],
    mustNot: ['base64', 'iVBORw0KGgo'],
  },
  {
    name: 'runs of blank lines are collapsed to one',
    html: page('<p>a</p><div><br><br><br></div><p></p><p></p><p>b</p><p>c<br><br><br><br>d</p>'),
    must: ['a\n\nb'],
    mustNot: ['\n\n\n'],
  },
];

for (const v of vectors) {
  t.test(v.name, async (t) => {
    const res = await convertWith(htmlConverter, fixture(v.html), v.baseUrl ? { baseUrl: v.baseUrl } : {});
    for (const s of v.must) t.ok(res.markdown.includes(s), `contains ${JSON.stringify(s)}`, { markdown: res.markdown });
    for (const s of v.mustNot ?? []) t.notOk(res.markdown.includes(s), `does not contain ${JSON.stringify(s)}`, { markdown: res.markdown });
    t.equal(res.pageCount, 1);
    t.equal(res.mime, 'text/html');
  });
}

t.test('a Windows-1252 page declared with <meta charset> is decoded', async (t) => {
  const html = '<html><head><meta charset="windows-1252"></head><body><p>Caf\u00e9 cr\u00e8me \u2013 \u20ac5</p></body></html>';
  const res = await convertWith(htmlConverter, fixture(iconv.encode(html, 'windows-1252')));
  t.match(res.markdown, 'Café crème – €5');
});

t.test('a Shift_JIS page declared with http-equiv Content-Type is decoded', async (t) => {
  const html = '<html><head><meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS"></head><body><h1>日本語の見出し</h1><p>こんにちは世界</p></body></html>';
  const res = await convertWith(htmlConverter, fixture(iconv.encode(html, 'Shift_JIS')));
  t.match(res.markdown, '# 日本語の見出し');
  t.match(res.markdown, 'こんにちは世界');
});

t.test('a UTF-16LE page with a BOM is decoded', async (t) => {
  const html = '<html><body><p>Grüße aus Köln</p></body></html>';
  const res = await convertWith(htmlConverter, fixture(Buffer.concat([Buffer.from([0xff, 0xfe]), iconv.encode(html, 'utf-16le')])));
  t.match(res.markdown, 'Grüße aus Köln');
});

t.test('count prices an HTML file as one page of its size in bytes', async (t) => {
  const html = page('<p>Hello</p>');
  const count = await htmlConverter.count(fixture(html), defaultOptions);
  t.same(count, { pages: 1, units: Buffer.byteLength(html) });
});

t.test('accepts sniffs HTML markup and refuses binary and tag-free text', async (t) => {
  const peek = (s: string | Buffer) => ({ bytes: Buffer.from(s), name: 'x.html' });
  t.ok(htmlConverter.accepts(peek('<!doctype html><html><body>x</body></html>')));
  t.ok(htmlConverter.accepts(peek('  <div class="a">fragment</div>')));
  t.ok(htmlConverter.accepts({ bytes: Buffer.concat([Buffer.from([0xff, 0xfe]), iconv.encode('<html><p>x</p></html>', 'utf-16le')]), name: 'x.html' }));
  t.notOk(htmlConverter.accepts(peek('%PDF-1.7\n%\u00e2\u00e3')));
  t.notOk(htmlConverter.accepts(peek(Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0, 0, 0]))));
  t.notOk(htmlConverter.accepts(peek('Just some plain text, 3 < 4 and 5 > 2.')));
});

t.test('a cancelled conversion throws an ApiError instead of converting', async (t) => {
  const ac = new AbortController();
  ac.abort();
  const err = await convertWith(htmlConverter, fixture(page('<p>x</p>')), {}, { signal: ac.signal }).catch((e: unknown) => e);
  t.ok(err instanceof ApiError, 'an ApiError');
  t.equal((err as ApiError).code, 'invalid_document');
  t.match((err as ApiError).message, /cancelled/);
});

t.test('htmlToMarkdown takes a bare fragment, as the Word converter sends it', async (t) => {
  const md = htmlToMarkdown('<h2>Fragment</h2><p>Text with <a href="https://a.example/x">a link</a>.</p><ul><li>item</li></ul>');
  t.equal(md, '## Fragment\n\nText with [a link](https://a.example/x).\n\n- item');
});
