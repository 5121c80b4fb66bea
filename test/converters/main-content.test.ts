// The main_content option of HTML conversions (shared/main-content.ts through html-to-md and the
// HTML converter): an encyclopedia page reduced to its title and article, kept whole without the
// option, pages that are not articles converted whole, and the limits that keep hostile pages
// away from Readability (asserted by the reason given, never by time).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import t from 'tap';
import { htmlConverter } from '../../src/converters/html.js';
import { htmlToMarkdown } from '../../src/converters/shared/html-to-md.js';
import { MAIN_CONTENT_LIMITS, mainContent, type SourceElement } from '../../src/converters/shared/main-content.js';
import { convertWith } from '../helpers/convert-ctx.js';
import { ARTICLE, CLUTTER, PAGE_URL, clutteredPage, clutterStrings } from '../fixtures/build/web-page.js';

const require = createRequire(import.meta.url);
const domino = createRequire(require.resolve('turndown'))('@mixmark-io/domino') as {
  createDocument(html: string): { documentElement: SourceElement };
};

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-main-content-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
function fixture(html: string): string {
  const file = path.join(dir, `page-${++n}.html`);
  writeFileSync(file, html);
  return file;
}

/** Why the page would be converted whole, or 'article'. */
function outcome(html: string, limits = MAIN_CONTENT_LIMITS): string {
  const r = mainContent(domino.createDocument(html).documentElement, undefined, limits);
  return r.found ? 'article' : r.reason;
}

const LONG = ARTICLE.paragraphs.join(' ');

t.test('with main_content the Markdown is the title heading and the article, without the page clutter', async (t) => {
  const { markdown } = await convertWith(htmlConverter, fixture(clutteredPage()), { main_content: true, baseUrl: PAGE_URL });
  const [p1, p2, p3, p4] = ARTICLE.paragraphs as [string, string, string, string];
  t.ok(markdown.startsWith(`# ${ARTICLE.pageTitle}\n\n${p1}\n\n## ${ARTICLE.heading}\n\n${p2}`), 'starts with the title, then the article text');
  t.match(markdown, `${p3}\n\n${p4}`, 'the article runs to its end');
  t.equal(markdown.match(/^# /gm)?.length, 1, 'one # heading: the h1 that repeats the title is not kept twice');
  t.same(clutterStrings().filter((s) => markdown.includes(s)), [], 'no cookie banner, header, menu, sidebar, language or footer text');
  t.notMatch(markdown, /https:\/\/l\d+\.example\.org/, 'no language link');
  t.match(markdown, `[${ARTICLE.link.text}](${ARTICLE.link.absolute})`, 'a relative link resolved against the page address');
  t.match(markdown, `![${ARTICLE.image.alt}](${ARTICLE.image.absolute})`, 'a relative image resolved too');
});

t.test('without main_content (the HTML default) or with false, the whole document is converted', async (t) => {
  const file = fixture(clutteredPage());
  const byDefault = (await convertWith(htmlConverter, file, { baseUrl: PAGE_URL })).markdown;
  const whole = (await convertWith(htmlConverter, file, { main_content: false, baseUrl: PAGE_URL })).markdown;
  t.equal(byDefault, whole, 'false is the default');
  t.ok(whole.startsWith(`${CLUTTER.cookie}. Accept all cookies?`), 'the page starts with its cookie banner');
  t.same(clutterStrings().filter((s) => !whole.includes(s)), [], 'the header, menu, sidebar, languages and footer are kept');
  t.match(whole, '[Language 1](https://l1.example.org/wiki/Markdown)');
  t.match(whole, '[Language 150](https://l150.example.org/wiki/Markdown)');
  t.match(whole, `# ${ARTICLE.title}\n\n${ARTICLE.paragraphs[0]}`, 'the article is there too, under its own h1');
  t.match(whole, `[${ARTICLE.link.text}](${ARTICLE.link.absolute})`);
  t.ok(whole.indexOf('Language 150') < whole.indexOf(ARTICLE.paragraphs[0]!), 'after the 150 language links');
});

t.test('a page that is not an article is converted whole rather than emptied', async (t) => {
  const pages = {
    'a short page': '<html><head><title>Note</title></head><body><div class="menu"><a href="/">Home</a></div><p>Back on Monday.</p></body></html>',
    'a form': `<html><head><title>Sign in</title></head><body><h1>Sign in</h1><form action="/login">
      <label>E-mail address <input name="email"></label><label>Password <input type="password" name="pw"></label>
      <input type="checkbox" name="keep"> Keep me signed in<button>Sign in</button></form><p><a href="/reset">Forgot your password?</a></p></body></html>`,
    'a list of links': `<html><body><ul>${Array.from({ length: 60 }, (_, i) => `<li><a href="/p/${i}">Page ${i}</a></li>`).join('')}</ul></body></html>`,
  };
  for (const [name, html] of Object.entries(pages)) {
    t.equal(outcome(html), 'not-an-article', `${name}: Readability does not take it for an article`);
    const whole = htmlToMarkdown(html);
    t.ok(whole.length > 0, `${name}: has text`);
    t.equal(htmlToMarkdown(html, { mainContent: true }), whole, `${name}: converted whole`);
  }
  t.match(htmlToMarkdown(pages['a short page'], { mainContent: true }), 'Back on Monday.');
  t.match(htmlToMarkdown(pages['a form'], { mainContent: true }), /# Sign in[\s\S]*E-mail address[\s\S]*Forgot your password\?/);
});

t.test('a <base href> decides where the article\'s relative links point', async (t) => {
  const html = clutteredPage().replace('<head>', '<head><base href="https://mirror.example.net/docs/">');
  const md = htmlToMarkdown(html, { mainContent: true, baseUrl: PAGE_URL });
  t.match(md, `[${ARTICLE.link.text}](https://mirror.example.net/wiki/CommonMark)`);
  t.match(md, `![${ARTICLE.image.alt}](https://mirror.example.net/docs/images/markdown-mark.png)`);
  t.notMatch(md, /Language 1\b/);
});

t.test('the article keeps its code blocks with their language, tables and lists', async (t) => {
  const html = `<html><head><title>Parsing numbers safely in modern TypeScript - Example Blog</title></head><body>
    <div class="sidebar"><a href="/a">Archive</a> <a href="/b">About</a></div>
    <article><h1>Parsing numbers safely in modern TypeScript</h1><p>${LONG}</p><h1>The radix</h1>
    <pre><code class="language-ts">const n: number = Number.parseInt("42", 10);</code></pre>
    <table><thead><tr><th>Input</th><th>Result</th></tr></thead><tbody><tr><td>"42"</td><td>42</td></tr><tr><td>"x"</td><td>NaN</td></tr></tbody></table>
    <ul><li>Always pass the radix.</li><li>Check for NaN.</li></ul><p>${LONG}</p></article></body></html>`;
  const md = htmlToMarkdown(html, { mainContent: true });
  t.ok(md.startsWith(`# Parsing numbers safely in modern TypeScript\n\n${LONG}\n\n## The radix\n\n`),
    'the title less its site name, then the article, whose own h1 is a level down');
  t.match(md, '```ts\nconst n: number = Number.parseInt("42", 10);\n```');
  t.match(md, '| Input | Result |\n| --- | --- |\n| "42" | 42 |\n| "x" | NaN |');
  t.match(md, '- Always pass the radix.\n- Check for NaN.');
  t.notMatch(md, /Archive|About/);
});

t.test('Markdown characters in the title are escaped in the heading', async (t) => {
  const html = `<html><head><title>Using *stars* and [brackets] in file_names</title></head><body><article><p>${LONG}</p><p>${LONG}</p></article></body></html>`;
  t.ok(htmlToMarkdown(html, { mainContent: true }).startsWith('# Using \\*stars\\* and \\[brackets\\] in file\\_names\n\n'));
});

t.test('pages past the limits never reach Readability and are converted whole', async (t) => {
  const para = `<p>${LONG}</p>`;
  const nested = (depth: number): string => `<html><body>${para}${'<div>'.repeat(depth)}${para}${'</div>'.repeat(depth)}</body></html>`;
  // <html>, <body> and the innermost <p> are three levels: the divs take the rest.
  t.equal(outcome(nested(MAIN_CONTENT_LIMITS.maxDepth - 3)), 'article', 'at the depth limit Readability runs');
  t.equal(outcome(nested(MAIN_CONTENT_LIMITS.maxDepth - 2)), 'too-deep', 'one level deeper it does not');
  const tables = `<html><body>${para}${'<table><tr><td>'.repeat(40)}${para}${'</td></tr></table>'.repeat(40)}</body></html>`;
  t.equal(outcome(tables), 'too-deep', '40 nested tables (160 levels)');
  t.equal(htmlToMarkdown(tables, { mainContent: true }), htmlToMarkdown(tables), 'converted whole');

  // A flat page of many elements: its estimate passes maxWork long before any depth limit.
  const elements = Math.ceil(MAIN_CONTENT_LIMITS.maxWork / 20);
  const wide = `<html><body>${para}<div>${'<a href="/x">l</a>'.repeat(elements)}</div></body></html>`;
  t.equal(outcome(wide), 'too-large', `${elements} links in one div`);
  t.equal(outcome(clutteredPage()), 'article', 'the encyclopedia page is within the limits');
  t.equal(outcome(clutteredPage(), { ...MAIN_CONTENT_LIMITS, maxWork: 5_000 }), 'too-large', 'and past a lower maxWork');
});

t.test('attributes named like object internals change nothing outside the page', async (t) => {
  const html = `<html><head><title>Prototype</title></head><body><article id="__proto__" __proto__="x" constructor="y" polluted="yes">
    <p class="__proto__">${LONG}</p><p id="constructor">${LONG}</p></article></body></html>`;
  const md = htmlToMarkdown(html, { mainContent: true });
  t.ok(md.startsWith('# Prototype\n\n'));
  t.equal(({} as Record<string, unknown>).polluted, undefined);
  t.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'x'), false);
});
