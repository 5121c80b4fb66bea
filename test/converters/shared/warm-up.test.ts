// warmUp: the document the HTTP threads render before they accept goes through every rule of
// the renderer (each construct below is one marked or this project compiles on first use).
import t from 'tap';
import { markdownToHtml, warmUp } from '../../../src/converters/shared/markdown.js';

t.test('the warm-up renders every construct the renderer knows', async (t) => {
  const html = warmUp();
  const expected: Array<[string, RegExp]> = [
    ['ATX heading', /<h1>Heading<\/h1>/],
    ['setext heading', /<h1>Setext heading<\/h1>/],
    ['strong and emphasis', /<strong>bold<\/strong>, <em>emphasis<\/em>/],
    ['strikethrough', /<del>strike<\/del>/],
    ['code span', /<code>code<\/code>/],
    ['link with a title', /<a href="https:\/\/example.com" title="title">link<\/a>/],
    ['image', /<img src="a.png" alt="an image">/],
    ['URL autolink', /<a href="https:\/\/example.org">/],
    ['www autolink', /<a href="http:\/\/www.example.net">/],
    ['email autolink', /<a href="mailto:someone@example.com">/],
    ['inline math', /<span class="math inline">\\\(x\^2\\\)<\/span>/],
    ['display math', /<span class="math display">\\\[\\int x\\,dx\\\]<\/span>/],
    ['hard break', /hard<br>break/],
    ['block quote', /<blockquote>\n<p>A quote<\/p>/],
    ['task list item', /<input disabled="" type="checkbox"> a task/],
    ['nested list', /<ul>\n<li>nested<\/li>/],
    ['ordered list', /<ol>\n<li>one<\/li>/],
    ['table with an aligned column', /<th align="center">b<\/th>/],
    ['fenced code', /<pre><code class="language-js">code\n<\/code><\/pre>/],
    ['indented code', /<pre><code>indented\n<\/code><\/pre>/],
    ['marker comment kept', /<!-- page 2 -->/],
    ['raw HTML escaped', /&lt;b&gt;raw&lt;\/b&gt;/],
    ['thematic break', /<hr>/],
  ];
  for (const [what, re] of expected) t.match(html, re, what);
});

t.test('renders after the warm-up answer as before it', async (t) => {
  const md = '# Notes\n\nSome **bold** text and a [link](javascript:alert(1)).\n';
  const before = markdownToHtml(md);
  warmUp();
  t.equal(markdownToHtml(md), before);
  t.equal(before, '<h1>Notes</h1>\n<p>Some <strong>bold</strong> text and a link.</p>\n');
});
