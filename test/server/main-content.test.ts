// The main_content option through the API, on the worker pool: a URL is read for its article by
// default and an HTML document is converted whole, either way turned by the option in JSON and in
// multipart; the estimate takes it and prices the same; a wrong value or a wrong endpoint is a
// 400 naming it. The page comes from a node:http server on 127.0.0.1 (ALLOW_PRIVATE_NETWORK=1).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { oneMode, startWorld } from '../helpers/world.js';
import { ARTICLE, CLUTTER, PAGE_URL, clutteredPage, clutterStrings } from '../fixtures/build/web-page.js';

interface FileJ { role: string; format: string | null; content: string | null }
interface ConvJ { status: string; files: FileJ[] }
interface Problem { error: string; detail: string }

const PAGE = clutteredPage();
const server = http.createServer((req, res) => {
  if (req.url === '/wiki/Markdown') res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
  else res.writeHead(404).end();
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const pageUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/wiki/Markdown`;
t.teardown(() => {
  server.closeAllConnections();
  server.close();
});

const markdownOf = (c: ConvJ): string => c.files.find((f) => f.role === 'output' && f.format === 'markdown')?.content ?? '';
const clutterIn = (md: string): string[] => clutterStrings().filter((s) => md.includes(s));
const isArticle = (md: string): boolean => md.startsWith(`# ${ARTICLE.pageTitle}\n\n${ARTICLE.paragraphs[0]}`);

for (const mode of oneMode()) {
  t.test(`main_content through the API (${mode})`, async (t) => {
    const w = await startWorld(mode, { ALLOW_PRIVATE_NETWORK: '1' }, { pool: true });
    t.teardown(() => w.close());

    const convert = async (kind: string, body: { json?: unknown; body?: FormData }): Promise<string> => {
      const res = await w.req('POST', `/v1/convert/${kind}?wait=30`, body);
      t.equal(res.status, 200, `${kind} answers 200`);
      const c = await res.json() as ConvJ;
      t.equal(c.status, 'completed');
      return markdownOf(c);
    };

    await t.test('a URL is converted to its article by default, and whole with main_content false', async (t) => {
      const main = await convert('url', { json: { url: pageUrl } });
      t.ok(isArticle(main), 'starts with the title heading and the article text');
      t.same(clutterIn(main), [], 'none of the clutter');
      t.match(main, `[${ARTICLE.link.text}](${new URL(ARTICLE.link.href, pageUrl).href})`, 'links resolved against the page address');
      t.match(main, `![${ARTICLE.image.alt}](${new URL(ARTICLE.image.src, pageUrl).href})`);

      const whole = await convert('url', { json: { url: pageUrl, main_content: false } });
      t.notOk(isArticle(whole));
      t.same(clutterStrings().filter((s) => !whole.includes(s)), [], 'every piece of clutter kept');
      t.match(whole, ARTICLE.paragraphs[3]!);
    });

    await t.test('HTML is converted whole by default, and to its article with main_content true', async (t) => {
      const whole = await convert('html', { json: { html: PAGE, base_url: PAGE_URL } });
      t.ok(whole.startsWith(CLUTTER.cookie), 'the cookie banner comes first');
      t.same(clutterStrings().filter((s) => !whole.includes(s)), [], 'every piece of clutter kept');

      const main = await convert('html', { json: { html: PAGE, base_url: PAGE_URL, main_content: true } });
      t.ok(isArticle(main));
      t.same(clutterIn(main), []);
      t.match(main, `[${ARTICLE.link.text}](${ARTICLE.link.absolute})`, 'links resolved against base_url');
    });

    await t.test('multipart takes main_content as a field', async (t) => {
      const form = (value?: string): FormData => {
        const fd = new FormData();
        fd.append('file', new Blob([PAGE], { type: 'text/html' }), 'markdown.html');
        fd.append('base_url', PAGE_URL);
        if (value !== undefined) fd.append('main_content', value);
        return fd;
      };
      const main = await convert('html', { body: form('true') });
      t.ok(isArticle(main));
      t.same(clutterIn(main), []);
      t.match(main, `![${ARTICLE.image.alt}](${ARTICLE.image.absolute})`);
      const whole = await convert('html', { body: form('false') });
      t.same(clutterStrings().filter((s) => !whole.includes(s)), [], 'false keeps the whole page');
      t.equal(await convert('html', { body: form() }), whole, 'and is the default');
    });

    await t.test('the estimate takes main_content and prices the same', async (t) => {
      const price = async (kind: string, json: unknown): Promise<number> => {
        const res = await w.req('POST', `/v1/convert/${kind}/estimate`, { json });
        t.equal(res.status, 200);
        return (await res.json() as { credits_total: number }).credits_total;
      };
      const html = await price('html', { html: PAGE });
      t.ok(html > 0);
      t.equal(await price('html', { html: PAGE, main_content: true }), html);
      t.equal(await price('html', { html: PAGE, main_content: false }), html);
      const url = await price('url', { url: pageUrl });
      t.equal(url, 1 + html, 'a URL: the fetch plus the page as HTML');
      t.equal(await price('url', { url: pageUrl, main_content: false }), url);
    });

    await t.test('main_content must be a boolean, and only HTML and URL take it', async (t) => {
      for (const [kind, json] of [['html', { html: PAGE, main_content: 'yes' }], ['url', { url: pageUrl, main_content: 1 }]] as const) {
        const res = await w.req('POST', `/v1/convert/${kind}`, { json });
        t.equal(res.status, 400, kind);
        const p = await res.json() as Problem;
        t.equal(p.error, 'invalid_request');
        t.match(p.detail, '"main_content" must be true or false');
      }
      const res = await w.req('POST', '/v1/convert/text', { json: { text: 'plain', main_content: true } });
      t.equal(res.status, 400);
      t.match((await res.json() as Problem).detail, 'Unknown field "main_content"');
    });
  });
}
