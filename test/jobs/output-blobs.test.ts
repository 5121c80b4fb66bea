// Outputs over 4 KiB are kept in blobs, not in their rows, and shown inline all the same (up to
// 1 MiB): in the answer built from what was stored, in a GET, in an idempotent replay. Outputs up
// to 4 KiB stay in their rows.
import t from 'tap';
import { existsSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { oneMode, startWorld, storeModes } from '../helpers/world.js';

interface FileJ { id: string; role: string; format?: string; bytes: number; content: string | null }
interface ConvJ { id: string; status: string; files: FileJ[] }

for (const mode of storeModes()) {
  t.test(`outputs kept in blobs (${mode})`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    const blobsDir = path.join(w.dataDir, 'blobs');
    const rowOf = async (id: string) => (await w.db.sql`select content, blob from files where id = ${id}`)[0]!;
    const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(' ');

    await t.test('a converted text over 4 KiB: a blob, shown in the answer, in a GET and in a replay', async (t) => {
      const text = `${words(1500)}\n`;
      const send = () => w.req('POST', '/v1/convert/text', { json: { text }, headers: { 'idempotency-key': `big-${mode}` } });
      const res = await send();
      t.equal(res.status, 200);
      const conv = await res.json() as ConvJ;
      const md = conv.files.find((f) => f.role === 'output' && f.format === 'markdown')!;
      t.ok(md.bytes > 4096, `${md.bytes} bytes of Markdown`);
      t.match(md.content, /^word0 word1 word2/, 'the answer shows it inline');
      t.match(md.content, /word1499/);
      const row = await rowOf(md.id);
      t.equal(row.content, null, 'not in its row');
      t.equal(readFileSync(path.join(blobsDir, row.blob as string), 'utf8'), md.content, 'its blob holds what the answer showed');

      const got = await (await w.req('GET', `/v1/conversions/${conv.id}`)).json() as ConvJ;
      t.equal(got.files.find((f) => f.id === md.id)!.content, md.content, 'a GET reads it back from the blob');
      const replay = await send();
      t.equal(replay.headers.get('idempotent-replayed'), 'true');
      t.equal((await replay.json() as ConvJ).files.find((f) => f.id === md.id)!.content, md.content, 'so does a replay');
      const listed = await (await w.req('GET', '/v1/conversions?limit=1')).json() as { data: ConvJ[] };
      t.equal(listed.data[0]!.files.find((f) => f.id === md.id)!.content, null, 'a list shows no contents, as before');
    });

    await t.test('a rendered Markdown over 4 KiB: a blob, shown inline', async (t) => {
      const res = await w.req('POST', '/v1/convert/markdown/html', { json: { markdown: `# Long\n\n${words(1200)}\n` } });
      t.equal(res.status, 200);
      const conv = await res.json() as ConvJ;
      const html = conv.files.find((f) => f.role === 'output')!;
      t.match(html.content, /^<h1>Long<\/h1>\n<p>word0 /);
      t.equal((await rowOf(html.id)).content, null);
      const got = await (await w.req('GET', `/v1/conversions/${conv.id}`)).json() as ConvJ;
      t.equal(got.files.find((f) => f.id === html.id)!.content, html.content);
    });

    await t.test('an output up to 4 KiB stays in its row', async (t) => {
      const res = await w.req('POST', '/v1/convert/text', { json: { text: 'a few words' } });
      const conv = await res.json() as ConvJ;
      const md = conv.files.find((f) => f.role === 'output' && f.format === 'markdown')!;
      t.equal(md.content, 'a few words\n');
      const row = await rowOf(md.id);
      t.equal(row.content, 'a few words\n');
      t.equal(row.blob, null);
    });

    await t.test('a GET while a blob waits to be placed answers 503 retry; once placed, the content', async (t) => {
      const res = await w.req('POST', '/v1/convert/text', { json: { text: words(1500) } });
      const conv = await res.json() as ConvJ;
      const md = conv.files.find((f) => f.role === 'output' && f.format === 'markdown')!;
      const blob = (await rowOf(md.id)).blob as string;
      // As a commit whose answer was lost leaves it: the row committed, the blob still in pending/.
      const pending = path.join(w.dataDir, 'pending', `${encodeURIComponent(blob)}~test`);
      renameSync(path.join(blobsDir, blob), pending);
      const waiting = await w.req('GET', `/v1/conversions/${conv.id}`);
      t.equal(waiting.status, 503);
      t.equal(waiting.headers.get('retry-after'), '1');
      t.equal((await waiting.json() as { error: string }).error, 'service_unavailable');
      renameSync(pending, path.join(blobsDir, blob));
      const got = await (await w.req('GET', `/v1/conversions/${conv.id}`)).json() as ConvJ;
      t.equal(got.files.find((f) => f.id === md.id)!.content, md.content);
      t.ok(existsSync(path.join(blobsDir, blob)));
    });
  });
}

for (const mode of oneMode()) {
  t.test(`outputs a pool thread writes to pending/ itself (${mode})`, async (t) => {
    const w = await startWorld(mode, {}, { pool: true });
    t.teardown(() => w.close());
    const text = `${Array.from({ length: 1500 }, (_, i) => `word${i}`).join(' ')}\n`;
    const fd = new FormData();
    fd.append('file', new Blob([text]), 'notes.txt');
    const res = await w.req('POST', '/v1/convert/text', { body: fd });
    t.equal(res.status, 200);
    const conv = await res.json() as ConvJ;
    const md = conv.files.find((f) => f.role === 'output' && f.format === 'markdown')!;
    t.match(md.content, /^word0 word1 .* word1499\n$/, 'the answer shows the whole output');
    const [row] = await w.db.sql`select content, blob from files where id = ${md.id}`;
    t.equal(row!.content, null, 'not in its row');
    t.equal(readFileSync(path.join(w.dataDir, 'blobs', row!.blob as string), 'utf8'), md.content, 'its blob, placed, holds it');
    t.same(readdirSync(path.join(w.dataDir, 'pending')), [], 'nothing is left in pending/');
  });
}
