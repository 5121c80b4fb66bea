import t from 'tap';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { oneMode, startWorld } from '../helpers/world.js';
import { parseRange } from '../../src/server/stream-file.js';

interface FileJ { id: string; role: string; format: string | null; content: string | null; bytes: number; name: string }
interface ConvJ { id: string; files: FileJ[] }

/** A few MB of text whose every line is different, so any wrong offset shows. */
function bigText(lines: number): string {
  const out: string[] = [];
  for (let i = 0; i < lines; i++) out.push(`line ${String(i).padStart(7, '0')} of a long document with some words in it`);
  return out.join('\n') + '\n';
}

t.test('Range headers parse as RFC 9110 says', async (t) => {
  t.same(parseRange('bytes=0-9', 100), { start: 0, end: 9 });
  t.same(parseRange('bytes=90-', 100), { start: 90, end: 99 });
  t.same(parseRange('bytes=-10', 100), { start: 90, end: 99 });
  t.same(parseRange('bytes=-500', 100), { start: 0, end: 99 }, 'a suffix longer than the file is the whole file');
  t.same(parseRange('bytes=50-5000', 100), { start: 50, end: 99 }, 'the end is clipped');
  t.equal(parseRange('bytes=100-', 100), 'unsatisfiable');
  t.equal(parseRange('bytes=-0', 100), 'unsatisfiable');
  t.equal(parseRange('bytes=0-0', 0), 'unsatisfiable');
  t.equal(parseRange('bytes=5-2', 100), undefined, 'an invalid spec is ignored');
  t.equal(parseRange('bytes=0-1,5-6', 100), undefined, 'several ranges: the whole file');
  t.equal(parseRange('items=0-1', 100), undefined);
  t.equal(parseRange(undefined, 100), undefined);
});

for (const mode of oneMode()) {
  t.test(`downloads (${mode})`, async (t) => {
    const w = await startWorld(mode, { SWEEP_INTERVAL_S: '0' });
    t.teardown(() => w.close());
    const text = bigText(60_000); // ~3.8 MB
    const fd = new FormData();
    fd.append('file', new Blob([text]), 'long.txt');
    fd.append('formats', 'markdown,text');
    const res = await w.req('POST', '/v1/convert/text', { body: fd });
    t.equal(res.status, 200);
    const c = await res.json() as ConvJ;
    const src = c.files.find((f) => f.role === 'source')!;
    const md = c.files.find((f) => f.format === 'markdown')!;
    const url = (f: FileJ): string => `/v1/conversions/${c.id}/files/${f.id}/content`;
    const whole = Buffer.from(text);

    await t.test('a multi-MB output streams whole, with its length and type', async (t) => {
      t.equal(md.content, null, 'too big to be inline');
      const [row] = await w.db.sql`select blob from files where id = ${md.id}`;
      const stored = readFileSync(w.app.deps.blobs.pathOf(row!.blob as string));
      t.ok(stored.length > 3_000_000);
      const dl = await w.req('GET', url(md));
      t.equal(dl.status, 200);
      t.match(dl.headers.get('content-type'), 'text/markdown');
      t.equal(dl.headers.get('content-length'), String(stored.length));
      t.equal(dl.headers.get('accept-ranges'), 'bytes');
      t.match(dl.headers.get('content-disposition'), 'long.md');
      t.ok(Buffer.from(await dl.arrayBuffer()).equals(stored), 'byte for byte the stored output');
    });

    await t.test('ranges return the exact bytes with 206 and Content-Range', async (t) => {
      const size = whole.length;
      const cases: Array<[string, number, number]> = [
        ['bytes=0-99', 0, 99],
        ['bytes=1000000-1999999', 1_000_000, 1_999_999],
        [`bytes=${size - 10}-`, size - 10, size - 1],
        ['bytes=-77', size - 77, size - 1],
        [`bytes=5-${size + 1000}`, 5, size - 1],
      ];
      for (const [range, a, b] of cases) {
        const r = await w.req('GET', url(src), { headers: { range } });
        t.equal(r.status, 206, range);
        t.equal(r.headers.get('content-range'), `bytes ${a}-${b}/${size}`, range);
        t.equal(r.headers.get('content-length'), String(b - a + 1), range);
        t.ok(Buffer.from(await r.arrayBuffer()).equals(whole.subarray(a, b + 1)), `${range}: exact bytes`);
      }
      const inlineOut = c.files.find((f) => f.format === 'text')!;
      const small = await w.req('GET', url(inlineOut), { headers: { range: 'bytes=0-3' } });
      t.equal(small.status, 206, 'inline contents take ranges too');
      t.equal(await small.text(), 'line');
      const multi = await w.req('GET', url(src), { headers: { range: 'bytes=0-1,5-6' } });
      t.equal(multi.status, 200, 'several ranges get the whole file');
      t.equal((await multi.arrayBuffer()).byteLength, size);
      const ifRange = await w.req('GET', url(src), { headers: { range: 'bytes=0-1', 'if-range': '"x"' } });
      t.equal(ifRange.status, 200, 'If-Range cannot be validated: the whole file');
      await ifRange.arrayBuffer();
    });

    await t.test('an unsatisfiable range is 416 problem+json with the size', async (t) => {
      const r = await w.req('GET', url(src), { headers: { range: `bytes=${whole.length}-` } });
      t.equal(r.status, 416);
      t.equal(r.headers.get('content-range'), `bytes */${whole.length}`);
      t.match(r.headers.get('content-type'), 'application/problem+json');
      const p = await r.json() as { error: string; status: number };
      t.equal(p.error, 'range_not_satisfiable');
      t.equal(p.status, 416);
    });

    await t.test('HEAD answers the headers of GET without a body', async (t) => {
      const head = (range?: string) => new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: number }>((resolve, reject) => {
        const req = http.request(w.url + url(src), { method: 'HEAD', headers: { 'x-api-key': w.key, ...(range ? { range } : {}) } }, (r) => {
          let n = 0;
          r.on('data', (d: Buffer) => { n += d.length; });
          r.on('end', () => resolve({ status: r.statusCode!, headers: r.headers, body: n }));
        });
        req.on('error', reject);
        req.end();
      });
      const full = await head();
      t.equal(full.status, 200);
      t.equal(full.headers['content-length'], String(whole.length));
      t.equal(full.body, 0);
      const part = await head('bytes=10-19');
      t.equal(part.status, 206);
      t.equal(part.headers['content-length'], '10');
      t.equal(part.headers['content-range'], `bytes 10-19/${whole.length}`);
      const after = await w.req('GET', url(src), { headers: { range: 'bytes=0-3' } });
      t.equal(await after.text(), 'line', 'the connection still serves requests after HEAD');
    });

    await t.test('a client that stops reading mid-download does not break the server', async (t) => {
      await new Promise<void>((resolve, reject) => {
        const req = http.get(w.url + url(md), { headers: { 'x-api-key': w.key } }, (r) => {
          r.once('data', () => { req.destroy(); resolve(); });
        });
        req.on('error', (e) => ((e as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(e)));
      });
      await new Promise((r) => setTimeout(r, 100));
      const again = await w.req('GET', url(md), { headers: { range: 'bytes=0-3' } });
      t.equal(again.status, 206);
      t.equal(await again.text(), 'line');
    });

    await t.test('an expired file is 410, another account\'s is 404', async (t) => {
      const other = await w.newKey();
      t.equal((await w.req('GET', url(src), { key: other.key })).status, 404);
      await w.db.sql`update files set expires_at = now() - interval '1 second' where id = ${src.id}`;
      const r = await w.req('GET', url(src));
      t.equal(r.status, 410);
      t.equal((await r.json() as { error: string }).error, 'file_expired');
    });
  });
}
