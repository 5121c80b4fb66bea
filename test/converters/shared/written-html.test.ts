// writtenHtmlToMarkdown (the Word converter's HTML → Markdown step) makes the Markdown
// htmlToMarkdown makes, whether its light parser reads the HTML or hands it to domino.
import t from 'tap';
import { htmlToMarkdown, writtenHtmlToMarkdown } from '../../../src/converters/shared/html-to-md.js';
import { parseWrittenHtml } from '../../../src/converters/shared/light-dom.js';
import { escape } from '../../../src/converters/shared/light-turndown.js';
import TurndownService from 'turndown';

/** Both conversions, and whether the light parser read the HTML. */
function both(html: string): { light: boolean; written: string; dom: string } {
  return { light: parseWrittenHtml(html) !== null, written: writtenHtmlToMarkdown(html), dom: htmlToMarkdown(html) };
}

// A small deterministic generator (mulberry32).
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ['alpha', 'beta', '*star*', '_under_', '`tick`', '[link]', '# hash', '- dash', '+ plus', '1. one', '2) two',
  '> quote', '~~~', '===', 'back\\slash', 'a&amp;b', '&lt;tag&gt;', '&quot;q&quot;', 'x|y', '\u00a0', 'ünï', '  ', ' ', '\t', '\n',
  'end.', 'DOCPIPEABCN1X', ''];
const INLINE = ['strong', 'em', 's', 'sup', 'sub', 'span', 'u', 'b', 'i', 'del', 'mark', 'small', 'strike'];

function generator(seed: number): () => string {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const text = (): string => Array.from({ length: 1 + Math.floor(r() * 3) }, () => pick(WORDS)).join(pick([' ', '', '  ', '\u00a0']));
  const inline = (depth: number, inLink = false): string => {
    const n = Math.floor(r() * 4);
    let out = '';
    for (let i = 0; i < n; i++) {
      const k = r();
      if (k < 0.4 || depth > 3) out += text();
      else if (k < 0.65) {
        const tag = pick(INLINE);
        out += `<${tag}>${inline(depth + 1, inLink)}</${tag}>`;
      } else if (k < 0.75 && !inLink) {
        const href = pick(['https://example.com/a b', 'https://example.com/(x)', 'javascript:alert(1)', '', ' #anchor ', 'mailto:a@b.c', 'https://x.y/?a=1&amp;b=2']);
        out += href === '' ? `<a id="bm${i}">${inline(depth + 1, true)}</a>` : `<a href="${href}">${inline(depth + 1, true)}</a>`;
      } else if (k < 0.82) out += '<br />';
      else if (k < 0.9) out += pick(['<img src="image" />', '<img alt="A *chart*" src="image" />', '<img alt=" multi\nline " src="image" />', '<img alt="x" />']);
      else out += `<sup><a href="#footnote-${i}" id="footnote-ref-${i}">[${i}]</a></sup>`;
    }
    return out;
  };
  const list = (depth: number): string => {
    const tag = pick(['ul', 'ol']);
    const start = tag === 'ol' && r() < 0.2 ? ' start="3"' : '';
    const items = Array.from({ length: 1 + Math.floor(r() * 3) }, () => {
      let body = inline(1);
      if (r() < 0.3 && depth < 3) body += list(depth + 1);
      if (r() < 0.15) body = `<p>${inline(1)}</p>${body}`;
      return `<li>${body}</li>`;
    });
    return `<${tag}${start}>${items.join('')}</${tag}>`;
  };
  const table = (depth: number): string => {
    const rows = 1 + Math.floor(r() * 3);
    const cols = 1 + Math.floor(r() * 3);
    const row = (cell: string): string => `<tr>${Array.from({ length: cols }, () => {
      const span = r() < 0.1 ? ' colspan="2"' : r() < 0.05 ? ' rowspan="2"' : '';
      return `<${cell}${span}>${r() < 0.2 ? '' : flow(depth + 1)}</${cell}>`;
    }).join('')}</tr>`;
    const body = Array.from({ length: rows }, () => row('td')).join('');
    return r() < 0.3 ? `<table><thead>${row('th')}</thead><tbody>${body}</tbody></table>` : `<table>${body}</table>`;
  };
  const block = (depth: number): string => {
    const k = r();
    if (k < 0.4) return `<p>${inline(0)}</p>`;
    if (k < 0.5) {
      const level = 1 + Math.floor(r() * 6);
      return `<h${level}>${inline(1)}</h${level}>`;
    }
    if (k < 0.65 && depth < 4) return list(depth);
    if (k < 0.75 && depth < 3) return table(depth);
    if (k < 0.8) return inline(0);
    // outside the light parser's subset: a browser's parser (domino) reads these
    return pick(['<div><p>in a div</p></div>', '<pre><code class="language-js">let a = 1;\n  b &lt; 2</code></pre>', '<p>code <code>x_y</code></p>',
      '<a href="#x"><a href="#y">nested</a></a>', '<p>a<p>b</p></p>', '<p>bare & ampersand</p>', '<p hidden="">hidden</p>', '<!-- c --><p>c</p>',
      '<table>text<tr><td>cell</td></tr></table>', '<ul><li>a<li>b</ul>', '<p><strong>bold<p>para</p></strong></p>', '<hr />', '<blockquote><p>q</p></blockquote>']);
  };
  const flow = (depth: number): string => Array.from({ length: 1 + Math.floor(r() * 3) }, () => block(depth)).join('');
  return () => flow(0);
}

const VECTORS: Array<{ name: string; html: string; light: boolean; markdown: string }> = [
  {
    name: 'nested numbered and bulleted lists, and a list that starts at 4',
    html: '<ol><li>First step<ol><li>Sub step</li></ol></li><li>Second <strong>step</strong></li></ol><ul><li>Top<ul><li>Inner<ul><li>Innermost</li></ul></li></ul></li></ul><ol start="4"><li>four</li><li>five</li></ol>',
    light: true,
    markdown: '1. First step\n   1. Sub step\n2. Second **step**\n\n- Top\n  - Inner\n    - Innermost\n\n4. four\n5. five',
  },
  {
    name: 'tables: rows written without tbody, a span, an empty cell, a header section, a layout table holding a table',
    html: '<table><tr><td><p>Region</p></td><td><p>Notes | remarks</p></td></tr><tr><td colspan="2"><p>Spanning</p><p>two lines</p></td></tr><tr><td></td><td><p>x</p></td></tr></table>'
      + '<table><thead><tr><th><p>H</p></th></tr></thead><tbody><tr><td><p>b</p></td></tr></tbody></table>'
      + '<table><tr><td><p>layout</p><table><tr><td><p>a</p></td><td><p>b</p></td></tr></table></td></tr></table>',
    light: true,
    markdown: '| Region | Notes \\| remarks |\n| --- | --- |\n| Spanning<br>two lines |  |\n|  | x |\n\n| H |\n| --- |\n| b |\n\nlayout\n\n| a | b |\n| --- | --- |',
  },
  {
    name: 'links: with spaces and parentheses, a script link, a bookmark anchor, an internal link',
    html: '<p>See <a href="https://example.com/a b">the <em>full</em> report</a>, <a href="javascript:alert(1)">no link</a>, <a id="_Toc1"></a>an anchor, <a href="#_Toc1">back</a> and <a href=" https://example.com/(x) "> spaced </a>.</p>',
    light: true,
    markdown: 'See [the _full_ report](<https://example.com/a b>), no link, an anchor, [back](#_Toc1) and [spaced](https://example.com/\\(x\\)) .',
  },
  {
    name: 'a note reference and the note list as mammoth writes them',
    html: '<p>Revenue<sup><a href="#footnote-1" id="footnote-ref-1">[1]</a></sup>.</p><ol><li id="footnote-1"><p>Source: the survey. <a href="#footnote-ref-1">↑</a></p></li></ol>',
    light: true,
    markdown: 'Revenue[\\[1\\]](#footnote-1).\n\n1. Source: the survey. [↑](#footnote-ref-1)',
  },
  {
    name: 'images with and without alt text, and one without a source',
    html: '<p><img alt="Company logo" src="image" /> and <img src="image" /> <img alt="a [b] *c*" src="image" /></p><p><img /></p>',
    light: true,
    markdown: '![Company logo](image) and ![](image) ![a \\[b\\] \\*c\\*](image)',
  },
  {
    name: 'code (outside the light subset: read by domino)',
    html: '<pre><code class="language-js">let a = 1;\n  b &lt; 2</code></pre><p>inline <code>x_y</code></p>',
    light: false,
    markdown: '```js\nlet a = 1;\n  b < 2\n```\n\ninline `x_y`',
  },
  {
    name: 'Markdown escapes, entities, a line break and whitespace at the edges of emphasis',
    html: '<p>1. not a list, # not a heading, *stars* and _under_ and a &amp; b &lt;tag&gt;</p><p>- dash</p><p>a<br />b</p><p><strong> lead</strong>trail<em>in </em>x</p>',
    light: true,
    markdown: '1\\. not a list, # not a heading, \\*stars\\* and \\_under\\_ and a & b <tag>\n\n\\- dash\n\na  \nb\n\n**lead**trail_in_ x',
  },
];

for (const v of VECTORS) {
  t.test(`${v.name}: the same Markdown both ways`, async (t) => {
    const r = both(v.html);
    t.equal(r.light, v.light, v.light ? 'read by the light parser' : 'handed to domino');
    t.equal(r.written, v.markdown);
    t.equal(r.dom, v.markdown);
  });
}

t.test("the light walk's escaping skips only text turndown's escaping leaves as it is", async (t) => {
  const td = new TurndownService();
  const probes: string[] = ['plain words', '', ' ', '1.5 million', '12. twelve', '3) three', 'a-b', 'a+b', 'x = y', 'C# and F#'];
  // every printable ASCII character, at the start, in the middle and at the end, alone and before a space
  for (let c = 0x20; c < 0x7f; c++) {
    const ch = String.fromCharCode(c);
    probes.push(ch, `${ch} x`, `x${ch}y`, `x ${ch}`, `${ch}${ch}${ch} x`, `${ch}${ch}${ch}${ch}`);
  }
  for (const p of probes) t.equal(escape(td, p), td.escape(p), JSON.stringify(p));
});

t.test('HTML a browser would rearrange is handed to domino', async (t) => {
  for (const html of ['<p>a<p>b</p></p>', '<a href="#x"><a href="#y">nested</a></a>', '<table>text<tr><td>cell</td></tr></table>',
    '<ul><li>a<li>b</ul>', '<p><strong>bold<p>para</p></strong></p>', '<p>bare & ampersand</p>', '<p hidden="">x</p>', '<p>unclosed',
    '<p>a</span>', '<!-- c --><p>c</p>', '<div><p>d</p></div>', '<p>x</p></br>', '<P>upper</P>', '<table><tr><td>a</td></tr></tbody></table>']) {
    t.equal(parseWrittenHtml(html), null, html);
    t.equal(writtenHtmlToMarkdown(html), htmlToMarkdown(html), `${html}: same Markdown`);
  }
});

t.test('rows written directly in a table are grouped in one tbody, as a browser groups them', async (t) => {
  const body = parseWrittenHtml('<table><tr><td>a</td></tr><tr><td>b</td></tr><thead><tr><th>h</th></tr></thead><tr><td>c</td></tr></table>')!;
  const table = body.firstChild!;
  t.same(table.children.map((c) => `${c.nodeName}:${c.children.length}`), ['TBODY:2', 'THEAD:1', 'TBODY:1']);
});

t.test('generated HTML of paragraphs, headings, nested lists, tables, links, notes and images gives the same Markdown both ways', async (t) => {
  const next = generator(20261125);
  let light = 0;
  let differ = 0;
  const N = 4000;
  for (let i = 0; i < N; i++) {
    const html = next();
    const r = both(html);
    if (r.light) light++;
    if (r.written !== r.dom) {
      differ++;
      if (differ <= 3) t.equal(r.written, r.dom, `document ${i}: ${html.slice(0, 300)}`);
    }
  }
  t.equal(differ, 0, `${differ} of ${N} documents differ`);
  // both paths are exercised
  t.ok(light > N / 4, `${light} read by the light parser`);
  t.ok(N - light > N / 10, `${N - light} handed to domino`);
});
