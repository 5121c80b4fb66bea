// The URL converter against local node:http servers (127.0.0.1, and 127.0.0.2 as a second
// "private" host). Tests that fetch from them pass allowPrivateNetwork: true, except the SSRF
// tests, which use the guard as production does or with a check that allows exactly one server.
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import iconv from 'iconv-lite';
import t, { type Test } from 'tap';
import { ApiError } from '../../src/errors.js';
import { htmlConverter } from '../../src/converters/html.js';
import { textConverter } from '../../src/converters/text.js';
import type { ConvertContext, ConvertOptions, ConvertResult, Peek } from '../../src/converters/types.js';
import { createUrlConverter, URL_LIMITS, urlConverter, USER_AGENT } from '../../src/converters/url.js';
import { classifyAddress } from '../../src/net/ssrf.js';
import { defaultOptions, makeCtx } from '../helpers/convert-ctx.js';
import { pourForever } from '../helpers/endless.js';
import { ARTICLE, clutteredPage, clutterStrings } from '../fixtures/build/web-page.js';

const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
const seen: Array<{ url: string; ua: string | undefined }> = [];
let closedEndless = false;

function listen(server: http.Server, host: string): Promise<number> {
  return new Promise((resolve) => server.listen(0, host, () => resolve((server.address() as AddressInfo).port)));
}

const second = http.createServer((req, res) => {
  seen.push({ url: `second${req.url}`, ua: req.headers['user-agent'] });
  res.end('second server');
});
const secondPort = await listen(second, '127.0.0.2');

const server = http.createServer((req, res) => {
  seen.push({ url: req.url ?? '', ua: req.headers['user-agent'] });
  const url = new URL(req.url ?? '/', 'http://x');
  const hop = /^\/redirect\/(\d+)$/.exec(url.pathname);
  if (hop) {
    const left = Number(hop[1]);
    res.writeHead(302, { location: left > 1 ? `/redirect/${left - 1}` : '/docs/page.html' }).end();
    return;
  }
  switch (url.pathname) {
    case '/docs/page.html':
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<html><head><script>track()</script></head><body><nav>Menu</nav><h1>Remote page</h1>'
        + '<p>See <a href="other.html">the other page</a> and <img src="/img/logo.png" alt="logo">.</p></body></html>');
      return;
    case '/wiki/Markdown':
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(clutteredPage());
      return;
    case '/notes':
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('Plain *notes* with <angle> brackets\r\nand a second line\r\n');
      return;
    case '/latin.html':
      // The header's charset beats the document's own (wrong) <meta>, as in browsers.
      res.writeHead(200, { 'content-type': 'text/html; charset=windows-1252' });
      res.end(iconv.encode('<html><head><meta charset="utf-8"></head><body><p>Déjà vu – 5 €</p></body></html>', 'windows-1252'));
      return;
    case '/report.pdf':
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': PDF.length });
      res.end(PDF);
      return;
    case '/download':
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-disposition': 'attachment; filename="Q3 report.pdf"' });
      res.end(PDF);
      return;
    case '/missing':
      res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not found</h1>');
      return;
    case '/huge-declared':
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(30 * 1024 * 1024) });
      res.write('x'.repeat(1024));
      return;
    case '/endless':
      res.on('close', () => { closedEndless = true; });
      pourForever(res);
      return;
    case '/silent':
      return; // never answers
    case '/stalls':
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('a first chunk, then nothing');
      return;
    case '/to-second':
      res.writeHead(302, { location: `http://127.0.0.2:${secondPort}/` }).end();
      return;
    case '/to-localhost':
      res.writeHead(301, { location: `http://localhost:${port}/docs/page.html` }).end();
      return;
    case '/to-file':
      res.writeHead(302, { location: 'file:///etc/passwd' }).end();
      return;
    default:
      res.writeHead(404).end();
  }
});
const port = await listen(server, '127.0.0.1');
const base = `http://127.0.0.1:${port}`;
t.teardown(() => {
  server.closeAllConnections();
  second.closeAllConnections();
  server.close();
  second.close();
});

interface Call { path: string; peek: Peek; options: ConvertOptions; bytes: Buffer }

/** Runs the converter on a source file holding `url`; convertFile converts HTML and text for real. */
async function fetchUrl(url: string, over: Partial<ConvertContext> = {}, conv = createUrlConverter({ timeoutMs: 5_000 }), options = defaultOptions) {
  const calls: Call[] = [];
  const ctx = makeCtx({
    allowPrivateNetwork: true,
    async convertFile(p: string, peek: Peek, options: ConvertOptions): Promise<ConvertResult> {
      calls.push({ path: p, peek, options, bytes: readFileSync(p) });
      if (peek.mime === 'text/html') return htmlConverter.convert(p, options, ctx);
      if (peek.mime === 'text/plain') return textConverter.convert(p, options, ctx);
      return { markdown: `converted ${peek.mime}`, pageCount: 3 };
    },
    ...over,
  });
  const source = path.join(ctx.tmpDir, 'source.url');
  writeFileSync(source, `${url}\n`);
  try {
    const result = await conv.convert(source, options, ctx).catch((e: unknown) => e);
    const leftovers = readdirSync(ctx.tmpDir).filter((f) => f !== 'source.url').map((f) => statSync(path.join(ctx.tmpDir, f)).size);
    return { result, calls, leftovers };
  } finally {
    ctx.cleanup();
  }
}

function failed(t: Test, result: unknown, code: string, message: RegExp): void {
  t.ok(result instanceof ApiError, 'fails with an ApiError');
  t.equal((result as ApiError).code, code);
  t.match((result as ApiError).message, message);
}

t.test('an HTML page becomes Markdown with absolute links, fetched with the docpipe User-Agent', async (t) => {
  const { result, calls } = await fetchUrl(`${base}/docs/page.html`);
  const r = result as ConvertResult;
  t.match(r.markdown, '# Remote page');
  t.match(r.markdown, `[the other page](${base}/docs/other.html)`);
  t.match(r.markdown, `![logo](${base}/img/logo.png)`);
  t.notMatch(r.markdown, /track\(\)|Menu/);
  t.equal(r.mime, 'text/html');
  t.equal(calls[0]?.peek.name, 'page.html');
  t.equal(calls[0]?.options.baseUrl, `${base}/docs/page.html`);
  t.equal(seen.find((s) => s.url === '/docs/page.html')?.ua, USER_AGENT);
});

t.test('a web page is read for its main content by default, and kept whole with main_content false', async (t) => {
  const page = `${base}/wiki/Markdown`;
  const main = await fetchUrl(page);
  const md = (main.result as ConvertResult).markdown;
  t.equal(main.calls[0]?.options.main_content, true, 'the fetched HTML is converted with main_content');
  t.ok(md.startsWith(`# ${ARTICLE.pageTitle}\n\n${ARTICLE.paragraphs[0]}`), 'the title heading, then the article');
  t.same(clutterStrings().filter((s) => md.includes(s)), [], 'none of the clutter');
  t.match(md, `[${ARTICLE.link.text}](${new URL(ARTICLE.link.href, page).href})`, 'links resolved against the page address');

  const whole = await fetchUrl(page, {}, undefined, { ...defaultOptions, main_content: false });
  const all = (whole.result as ConvertResult).markdown;
  t.equal(whole.calls[0]?.options.main_content, false);
  t.same(clutterStrings().filter((s) => !all.includes(s)), [], 'every piece of clutter kept');
  t.match(all, ARTICLE.paragraphs[3]!);
});

t.test('a text/plain page is converted as text, exactly as written', async (t) => {
  const { result, calls } = await fetchUrl(`${base}/notes`);
  t.equal((result as ConvertResult).markdown, 'Plain *notes* with <angle> brackets\nand a second line');
  t.equal((result as ConvertResult).mime, 'text/plain');
  t.equal(calls[0]?.peek.name, 'notes.txt');
});

t.test('the charset in the Content-Type header decides how a page is decoded', async (t) => {
  const { result } = await fetchUrl(`${base}/latin.html`);
  t.match((result as ConvertResult).markdown, 'Déjà vu – 5 €');
});

t.test('a PDF served as application/pdf is handed to convertFile as application/pdf', async (t) => {
  const { result, calls } = await fetchUrl(`${base}/report.pdf`);
  t.equal(calls.length, 1);
  t.equal(calls[0]!.peek.mime, 'application/pdf');
  t.equal(calls[0]!.peek.name, 'report.pdf');
  t.same(calls[0]!.peek.bytes, PDF, 'the peek holds the first bytes');
  t.same(calls[0]!.bytes, PDF, 'the file handed over holds the whole body');
  t.same(result, { markdown: 'converted application/pdf', pageCount: 3, mime: 'application/pdf' });
});

t.test('a generic octet-stream is sniffed and named from Content-Disposition', async (t) => {
  const { result, calls } = await fetchUrl(`${base}/download`);
  t.equal(calls[0]?.peek.mime, 'application/pdf');
  t.equal(calls[0]?.peek.name, 'Q3 report.pdf');
  t.equal((result as ConvertResult).mime, 'application/pdf');
});

t.test('five redirects are followed and the final address is the base for links', async (t) => {
  const { result, calls } = await fetchUrl(`${base}/redirect/5`);
  t.match((result as ConvertResult).markdown, `[the other page](${base}/docs/other.html)`);
  t.equal(calls[0]?.options.baseUrl, `${base}/docs/page.html`);
});

t.test('a chain of six redirects fails clearly', async (t) => {
  const { result, calls } = await fetchUrl(`${base}/redirect/6`);
  failed(t, result, 'invalid_document', /Too many redirects.*more than 5 times/);
  t.equal(calls.length, 0);
});

t.test('an HTTP error status fails with the status in the detail', async (t) => {
  const { result } = await fetchUrl(`${base}/missing`);
  failed(t, result, 'invalid_document', /answered HTTP 404/);
});

t.test('an endless body stops at the 20 MB cap, fast and without buffering it in memory', async (t) => {
  // Live memory, not garbage: collect before each sample (gc exposed at run time for this test).
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as (opts?: { type: 'minor' | 'major' }) => void;
  gc();
  const before = process.memoryUsage();
  let peak = 0;
  const sampler = setInterval(() => {
    gc({ type: 'minor' }); // cheap: chunks that are passed on die young; a buffered body would survive

    const m = process.memoryUsage();
    peak = Math.max(peak, m.heapUsed + m.arrayBuffers - before.heapUsed - before.arrayBuffers);
  }, 10);
  const { result, calls, leftovers } = await fetchUrl(`${base}/endless`, {}, createUrlConverter({ timeoutMs: 20_000 }));
  clearInterval(sampler);
  // the size cap stopped it, not the 20 s timeout (that would say "timed out")
  failed(t, result, 'invalid_document', /larger than the 20 MB limit/);
  t.ok(peak < 12 * 1024 * 1024, `live memory grew by ${Math.round(peak / 1024 / 1024)} MB at most, far less than the body`);
  t.ok(leftovers.every((size) => size <= URL_LIMITS.maxBytes), 'nothing past the cap was written');
  t.equal(calls.length, 0);
  await new Promise((r) => setTimeout(r, 50));
  t.ok(closedEndless, 'the connection was closed');
});

t.test('a declared Content-Length over the cap fails before downloading', async (t) => {
  const { result } = await fetchUrl(`${base}/huge-declared`);
  failed(t, result, 'invalid_document', /larger than the 20 MB limit.*declares 30 MB/);
});

t.test('a server that does not answer times out', async (t) => {
  const { result } = await fetchUrl(`${base}/silent`, {}, createUrlConverter({ timeoutMs: 1_000 }));
  failed(t, result, 'invalid_document', /timed out after 1 s/);
});

t.test('a body that stalls halfway times out', async (t) => {
  const { result } = await fetchUrl(`${base}/stalls`, {}, createUrlConverter({ timeoutMs: 1_000 }));
  failed(t, result, 'invalid_document', /timed out after 1 s/);
});

t.test('cancelling the task stops the fetch', async (t) => {
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 100);
  const { result } = await fetchUrl(`${base}/silent`, { signal: ac.signal });
  // the abort ended it, not the converter's own timeout (that would say "timed out")
  failed(t, result, 'invalid_document', /cancelled/);
});

t.test('without allowPrivateNetwork the guard refuses private targets in every spelling', async (t) => {
  const targets = [
    `${base}/docs/page.html`, 'http://10.0.0.1/', 'http://169.254.169.254/latest/meta-data/', `http://[::1]:${port}/`,
    `http://[::ffff:127.0.0.1]:${port}/`, `http://2130706433:${port}/`, `http://0x7f.0.0.1:${port}/`,
    `http://localhost:${port}/`, `http://localhost.:${port}/`,
  ];
  const before = seen.length;
  for (const url of targets) {
    const { result } = await fetchUrl(url, { allowPrivateNetwork: false });
    failed(t, result, 'invalid_request', /Refused to fetch .*(loopback|private|link-local)/);
  }
  t.equal(seen.length, before, 'no request reached the server');
});

t.test('a name that resolves to loopback is refused', async (t) => {
  const conv = createUrlConverter({ resolve: async () => ['127.0.0.1'] });
  const { result } = await fetchUrl(`http://docs.example.test:${port}/`, { allowPrivateNetwork: false }, conv);
  failed(t, result, 'invalid_request', /docs\.example\.test \(it resolves to 127\.0\.0\.1\): loopback/);
});

t.test('a redirect from an allowed server to another private address is refused at that hop', async (t) => {
  const conv = createUrlConverter({ check: (a) => (a === '127.0.0.1' ? null : classifyAddress(a)) });
  const allowed = await fetchUrl(`${base}/docs/page.html`, { allowPrivateNetwork: false }, conv);
  t.match((allowed.result as ConvertResult).markdown, '# Remote page', 'the allowed server itself is fetched');
  const before = seen.length;
  const toSecond = await fetchUrl(`${base}/to-second`, { allowPrivateNetwork: false }, conv);
  failed(t, toSecond.result, 'invalid_request', /127\.0\.0\.2.*loopback/);
  const toLocalhost = await fetchUrl(`${base}/to-localhost`, { allowPrivateNetwork: false }, conv);
  failed(t, toLocalhost.result, 'invalid_request', /localhost.*loopback/);
  t.notOk(seen.slice(before).some((s) => s.url.startsWith('second') || s.url === '/docs/page.html'), 'no refused hop was requested');
});

t.test('non-http schemes are refused, directly and as a redirect target', async (t) => {
  for (const url of ['file:///etc/passwd', 'ftp://example.com/a.pdf', 'gopher://example.com/', 'data:text/html,<h1>x</h1>']) {
    const { result } = await fetchUrl(url);
    failed(t, result, 'invalid_request', /Only http and https/);
  }
  const { result } = await fetchUrl(`${base}/to-file`);
  failed(t, result, 'invalid_request', /Only http and https.*not file/);
});

t.test('a host that does not resolve fails as a remote failure', async (t) => {
  const conv = createUrlConverter({
    resolve: async () => { throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }); },
  });
  const { result } = await fetchUrl('http://nowhere.invalid/', { allowPrivateNetwork: false }, conv);
  failed(t, result, 'invalid_document', /nowhere\.invalid could not be resolved/);
});

t.test('count prices one fetch without fetching', async (t) => {
  const ctx = makeCtx();
  t.teardown(() => ctx.cleanup());
  const source = path.join(ctx.tmpDir, 'source.url');
  writeFileSync(source, `${base}/docs/page.html`);
  const before = seen.length;
  t.same(await urlConverter.count(source, defaultOptions), { pages: 1, units: 1 });
  t.equal(seen.length, before);
});

t.test('accepts a source holding one http(s) URL', async (t) => {
  const peek = (s: string) => ({ bytes: Buffer.from(s), name: 'source' });
  t.ok(urlConverter.accepts(peek('https://example.com/a?b=c\n')));
  t.notOk(urlConverter.accepts(peek('ftp://example.com/')));
  t.notOk(urlConverter.accepts(peek('just text')));
});
