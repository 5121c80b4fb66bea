// SSRF through the API, for URL conversions and webhooks: odd spellings of loopback (decimal,
// octal, hex, short, IPv4-mapped IPv6, `localhost.` and friends), names whose DNS answers are
// private (and one that turns private between the check and the connect), and non-http
// schemes. Every one is refused with a Problem naming why, and a server listening on 127.0.0.1
// never receives a request. DNS is simulated by replacing dns.promises.lookup in this process,
// so conversions run on the inline executor here (pool threads would not see the stand-in).
import t from 'tap';
import http from 'node:http';
import dns from 'node:dns';
import os from 'node:os';
import path from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { oneMode, startWorld } from '../helpers/world.js';
import { InlineExecutor } from '../../src/jobs/executor.js';

interface Problem { error: string; detail: string; status: number }
interface ConvJ { status: string; files: Array<{ role: string; status: string; error: Problem | null }> }

/** Names this test's DNS answers; each `rebind*` name is public at its first lookup, loopback after. */
function fakeDns(): () => void {
  const real = dns.promises.lookup;
  const seen = new Map<string, number>();
  const answers: Record<string, string[]> = {
    'private.test': ['10.0.0.7'],
    'loopback.test': ['127.0.0.1'],
    'mixed.test': ['93.184.216.34', '127.0.0.1'],
    'metadata.test': ['169.254.169.254'],
    'mapped.test': ['::ffff:127.0.0.1'],
  };
  const fake = async (host: string, opts?: unknown): Promise<unknown> => {
    const h = host.toLowerCase();
    const n = (seen.get(h) ?? 0) + 1;
    seen.set(h, n);
    let list = answers[h];
    if (h.startsWith('rebind')) list = n === 1 ? ['93.184.216.34'] : ['127.0.0.1'];
    if (!list) return (real as (h: string, o?: unknown) => Promise<unknown>)(host, opts);
    const all = list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    return (opts as { all?: boolean } | undefined)?.all ? all : all[0];
  };
  (dns.promises as { lookup: unknown }).lookup = fake;
  return () => { (dns.promises as { lookup: unknown }).lookup = real; };
}

for (const mode of oneMode()) {
  t.test(`SSRF refusals through the API (${mode})`, async (t) => {
    let hits = 0;
    const server = http.createServer((_req, res) => { hits++; res.writeHead(302, { location: 'http://127.0.0.1/' }).end('internal'); });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'docpipe-ssrf-'));
    const executor = new InlineExecutor({ tmpDir: scratch, allowPrivateNetwork: false });
    const w = await startWorld(mode, { SWEEP_INTERVAL_S: '0' }, { executor });
    const restoreDns = fakeDns();
    t.teardown(async () => {
      restoreDns();
      await w.close();
      await new Promise<void>((r) => server.close(() => r()));
      rmSync(scratch, { recursive: true, force: true });
    });

    const blocked = [
      `http://2130706433:${port}/`, `http://0177.0.0.1:${port}/`, `http://0x7f.0.0.1:${port}/`, `http://0x7f000001:${port}/`,
      `http://127.1:${port}/`, `http://[::ffff:127.0.0.1]:${port}/`, `http://[::ffff:7f00:1]:${port}/`, `http://[::1]:${port}/`,
      `http://[::]:${port}/`, `http://0.0.0.0:${port}/`, `http://localhost:${port}/`, `http://localhost.:${port}/`,
      `http://LOCALHOST:${port}/`, `http://api.localhost:${port}/`, `http://169.254.169.254/latest/meta-data/`,
      `http://private.test:${port}/`, `http://loopback.test:${port}/`, `http://mixed.test:${port}/`,
      `http://metadata.test/`, `http://mapped.test:${port}/`, `https://10.1.2.3/`, `http://[fd00::1]/`,
    ];
    const schemes = ['file:///etc/passwd', 'ftp://127.0.0.1/x', 'gopher://127.0.0.1:70/', 'data:text/plain,hi', 'javascript:alert(1)', `ws://127.0.0.1:${port}/`];

    await t.test('URL conversions to private addresses fail their file with a Problem naming the address', async (t) => {
      for (const url of blocked) {
        const res = await w.req('POST', '/v1/convert/url?wait=20', { json: { url } });
        const body = await res.json() as ConvJ & Problem;
        if (res.status === 400) {
          t.match(body.detail, /not reachable|loopback|private|refused/i, `${url}: 400 naming why (${body.detail})`);
          continue;
        }
        t.equal(res.status, 200, `${url}: answered`);
        const src = body.files?.find((f) => f.role === 'source');
        t.equal(src?.status, 'failed', `${url}: the file fails`);
        t.match(src?.error?.detail, /Refused to fetch .*(loopback|private|link-local|unspecified|unique local|reserved)/, `${url}: ${src?.error?.detail}`);
      }
      t.equal(hits, 0, 'the server on 127.0.0.1 never received a request');
    });

    await t.test('estimates of URLs at private addresses are 400 naming the address (an estimate fetches to price)', async (t) => {
      for (const url of blocked) {
        const res = await w.req('POST', '/v1/convert/url/estimate', { json: { url } });
        const body = await res.json() as Problem;
        t.equal(res.status, 400, `${url}: 400`);
        t.match(body, { error: 'invalid_request', detail: /Refused to fetch .*(loopback|private|link-local|unspecified|unique local|reserved)/ }, `${url}: ${body.detail}`);
      }
      t.equal(hits, 0, 'the server on 127.0.0.1 never received a request');
    });

    await t.test('a name that turns private between the check and the connect is refused at connect', async (t) => {
      const res = await w.req('POST', '/v1/convert/url?wait=20', { json: { url: `http://rebind.test:${port}/` } });
      const body = await res.json() as ConvJ;
      const src = body.files.find((f) => f.role === 'source');
      t.equal(src?.status, 'failed');
      t.match(src?.error?.detail, /rebind\.test .*127\.0\.0\.1.*loopback/);
      t.equal(hits, 0, 'nothing was fetched');
    });

    await t.test('non-http schemes are 400 at submit, for URL conversions and webhooks', async (t) => {
      for (const url of schemes) {
        const res = await w.req('POST', '/v1/convert/url', { json: { url } });
        t.equal(res.status, 400, `convert ${url}`);
        t.match((await res.json() as Problem).detail, /http/i);
        const hook = await w.req('POST', '/v1/webhooks', { json: { url, eventTypes: ['conversion.completed'] } });
        t.equal(hook.status, 400, `webhook ${url}`);
      }
    });

    await t.test('webhook targets at private addresses are 400 naming the address', async (t) => {
      for (const url of blocked) {
        const res = await w.req('POST', '/v1/webhooks', { json: { url, eventTypes: ['conversion.completed'] } });
        const body = await res.json() as Problem;
        t.equal(res.status, 400, `${url}: 400`);
        t.match(body.detail, /not allowed: Refused to fetch .*(loopback|private|link-local|unspecified|unique local|reserved)/, `${url}: ${body.detail}`);
      }
      t.equal(hits, 0);
    });

    await t.test('a webhook whose name turns private after creation is refused at delivery', async (t) => {
      const created = await w.req('POST', '/v1/webhooks', { json: { url: `http://rebind-hook.test:${port}/hook`, eventTypes: ['conversion.completed'] } });
      t.equal(created.status, 201, 'created while the name was public');
      const { id } = await created.json() as { id: string };
      const attempt = await (await w.req('POST', `/v1/webhooks/${id}/test`)).json() as { status: string; error: string | null };
      t.not(attempt.status, 'delivered');
      t.match(attempt.error, /127\.0\.0\.1.*loopback/, `the attempt names the address: ${attempt.error}`);
      t.equal(hits, 0, 'the server on 127.0.0.1 never received the event');
    });
  });
}
