// What a user reads back of the names they sent: a conversion is named by the client's `name`
// or by its first source's file name; non-ASCII file names arrive as sent (UTF-8) and leave
// the same way in Content-Disposition; bidi controls never reach a stored name. And the wait
// window takes decimal digits only.
import t from 'tap';
import { MODES, startWorld } from '../helpers/world.js';

interface Conv { id: string; name: string; files: Array<{ id: string; role: string; name: string }> }

const w = await startWorld(MODES[0]!);
t.teardown(() => w.close());

function form(files: Array<[string, string]>, fields: Record<string, string> = {}): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  for (const [name, text] of files) fd.append('file', new File([text], name, { type: 'text/plain' }));
  return fd;
}

t.test('a conversion is named after its first source, or as the client names it', async (t) => {
  const one = await (await w.req('POST', '/v1/convert/text', { key: w.key, body: form([['report.txt', 'one']]) })).json() as Conv;
  t.equal(one.name, 'report.txt');
  const three = await (await w.req('POST', '/v1/convert/text', { key: w.key, body: form([['a.txt', 'a'], ['b.txt', 'b'], ['c.txt', 'c']]) })).json() as Conv;
  t.equal(three.name, 'a.txt and 2 more');
  const named = await (await w.req('POST', '/v1/convert/text', { key: w.key, json: { text: 'x', name: 'Quarterly notes' } })).json() as Conv;
  t.equal(named.name, 'Quarterly notes');
  const list = await (await w.req('GET', '/v1/conversions?limit=3', { key: w.key })).json() as { data: Conv[] };
  t.same(list.data.map((c) => c.name), ['Quarterly notes', 'a.txt and 2 more', 'report.txt'], 'the listing tells them apart');
  const res = await w.req('POST', '/v1/convert/text', { key: w.key, json: { text: 'x', name: 42 } });
  t.equal(res.status, 400, 'a name that is not a string is refused');
});

t.test('a UTF-8 file name round-trips into name and the download, bidi controls stripped', async (t) => {
  const c = await (await w.req('POST', '/v1/convert/text', { key: w.key, body: form([['résumé.txt', 'cv'], ['inv\u202Etxt.exe', 'x']]) })).json() as Conv;
  const sources = c.files.filter((f) => f.role === 'source');
  t.equal(sources[0]!.name, 'résumé.txt', 'decoded as UTF-8, not Latin-1');
  t.equal(sources[1]!.name, 'invtxt.exe', 'the right-to-left override is gone');
  t.equal(c.name, 'résumé.txt and 1 more');
  const dl = await w.req('GET', `/v1/conversions/${c.id}/files/${sources[0]!.id}/content`, { key: w.key });
  t.equal(dl.status, 200);
  const disposition = dl.headers.get('content-disposition') ?? '';
  t.match(disposition, "filename*=UTF-8''r%C3%A9sum%C3%A9.txt", 'the exact name, RFC 5987');
  t.match(disposition, 'filename="r_sum_.txt"', 'with an ASCII fallback');
});

t.test('wait takes decimal digits only', async (t) => {
  for (const wait of ['0x10', '1e1', '-1', '61', ' 5']) {
    const res = await w.req('POST', `/v1/convert/text?wait=${encodeURIComponent(wait)}`, { key: w.key, json: { text: 'x' } });
    t.equal(res.status, 400, `wait=${wait} is refused`);
  }
  t.equal((await w.req('POST', '/v1/convert/text?wait=10', { key: w.key, json: { text: 'x' } })).status, 200);
});
