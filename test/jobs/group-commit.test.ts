// Finished renders are stored by group commit (src/jobs/group-commit.ts): many conversions per
// transaction, the monthly allowance still exact under a burst, the answer the same as a later
// read, and webhook events queued for them as for any other conversion.
import t from 'tap';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { startWorld, storeModes } from '../helpers/world.js';

const PATH = '/v1/convert/markdown/html';
const markdown = (i: number) => `# Note ${i}\n\nSome *text* for note ${i}.\n`;

function blobsOf(dataDir: string, accountId: string): string[] {
  try {
    return readdirSync(path.join(dataDir, 'blobs', accountId));
  } catch {
    return [];
  }
}

for (const mode of storeModes()) {
  t.test(`${mode}: the answer is what a read of the conversion returns`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    const res = await w.req('POST', PATH, { json: { markdown: markdown(1), metadata: { ref: 'a-1' } } });
    t.equal(res.status, 200);
    const posted = await res.json() as { id: string; files: Array<{ content: string }> };
    t.match(posted.files[1].content, /<h1[^>]*>Note 1<\/h1>/);
    const read = await (await w.req('GET', `/v1/conversions/${posted.id}`)).json();
    t.same(posted, read, 'the answer and the stored conversion agree field by field');
    t.equal(res.headers.get('location'), `/v1/conversions/${posted.id}`);
  });

  t.test(`${mode}: a source kept in its row downloads byte for byte and is not shown inline`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    const text = `# Ünïcödé 📄\n\n${'line of text\n'.repeat(200)}`;
    const res = await w.req('POST', PATH, { json: { markdown: text } });
    t.equal(res.status, 200);
    const conv = await res.json() as { id: string; files: Array<{ role: string; content: string | null; bytes: number; links: { content: string } }> };
    const source = conv.files.find((f) => f.role === 'source')!;
    t.equal(source.content, null, 'a source never shows its bytes inline');
    t.equal(source.bytes, Buffer.byteLength(text));
    const download = await w.req('GET', source.links.content);
    t.equal(download.status, 200);
    t.equal(Buffer.from(await download.arrayBuffer()).toString('utf8'), text);
    t.same(blobsOf(w.dataDir, w.accountId), []);
  });

  t.test(`${mode}: a source holding NUL goes to a blob and still renders`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    // Past the first 8 KiB (the sniffed part), where a NUL does not make it binary.
    const text = `# Title\n\n${'x'.repeat(9000)}\u0000tail\n`;
    const res = await w.req('POST', PATH, { json: { markdown: text } });
    t.equal(res.status, 200);
    const conv = await res.json() as { files: Array<{ id: string; role: string; content: string | null; links: { content: string } }> };
    const source = conv.files.find((f) => f.role === 'source')!;
    const download = await w.req('GET', source.links.content);
    t.equal(Buffer.from(await download.arrayBuffer()).toString('utf8'), text, 'the NUL is kept');
    // The source's blob, and its HTML's (over 4 KiB: kept in a blob, shown inline all the same).
    t.same(blobsOf(w.dataDir, w.accountId).sort(), [source.id, `${source.id}.out0`]);
    t.match(conv.files.find((f) => f.role === 'output')!.content, /^<h1>Title<\/h1>/);
  });

  t.test(`${mode}: a burst shares transactions and the monthly allowance holds exactly`, async (t) => {
    const w = await startWorld(mode, { PLAN_OVERRIDES: JSON.stringify({ pro: { filesPerMonth: 15, requestsPerMinute: 1000 } }) });
    t.teardown(() => w.close());
    const { accountId, key } = await w.newKey({ plan: 'pro' });
    const group = w.app.deps.conversions.group;
    const before = { ...group.stats };
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) =>
      w.req('POST', PATH, { key, json: { markdown: markdown(i) } })
        .then(async (r) => ({ status: r.status, body: await r.json() as { error?: string } }))));
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 403);
    t.equal(ok.length, 15, 'exactly the allowance is admitted');
    t.equal(refused.length, 25, 'every other request is refused');
    for (const a of refused) t.equal(a.body.error, 'upload_limit_exceeded');

    const [usage] = await w.db.sql`select files from monthly_usage where account_id = ${accountId}`;
    t.equal(Number(usage!.files), 15, 'the month counts the admitted sources only');
    const [rows] = await w.db.sql`select count(*)::int as n from conversions where account_id = ${accountId}`;
    t.equal(rows!.n, 15);
    t.same(blobsOf(w.dataDir, accountId), [], 'no file on disk: rendered inline sources are kept in their rows');

    const batches = group.stats.batches - before.batches;
    t.equal(group.stats.conversions - before.conversions, 15);
    t.ok(batches < 15, `15 conversions were stored in ${batches} transactions`);
  });

  t.test(`${mode}: a batched render queues its webhook event`, async (t) => {
    const w = await startWorld(mode, { ALLOW_PRIVATE_NETWORK: '1' });
    t.teardown(() => w.close());
    const hook = await w.req('POST', '/v1/webhooks', { json: { url: 'http://127.0.0.1:9/hook', eventTypes: ['conversion.completed'] } });
    t.equal(hook.status, 201);
    const other = await w.newKey();
    const [mine, theirs] = await Promise.all([
      w.req('POST', PATH, { json: { markdown: markdown(1) } }).then((r) => r.json() as Promise<{ id: string }>),
      w.req('POST', PATH, { key: other.key, json: { markdown: markdown(2) } }).then((r) => r.json() as Promise<{ id: string }>),
    ]);
    const events = await w.db.sql`select conversion_id, type, body from webhook_events order by created_at`;
    t.same(events.map((e) => e.conversion_id), [mine.id], 'an event for the subscribed account only');
    t.equal(events[0]!.type, 'conversion.completed');
    t.equal(JSON.parse(events[0]!.body as string).data.object.status, 'completed');
    t.not(theirs.id, mine.id);
  });
}
