// Credits through the API: reservation at submit, charge at settle, release of the rest, and the
// ledger as the truth the gate is rebuilt from. Runs on Postgres + RedisGate and on embedded
// PGlite + LocalGate with the same assertions.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import { HeldExecutor, PROBLEM_FIELDS, startWorld, storeModes, type World } from '../helpers/world.js';
import { readLedger } from '../../src/billing/ledger.js';
import { buildPlain } from '../fixtures/build/docx.js';

interface ConvJ {
  id: string;
  status: string;
  usage: { credits_reserved: number; credits_charged: number; credits_remaining: number | null };
  files: Array<{ role: string; name: string; status: string; credits: number | null }>;
}

/** Sum and number of the account's ledger rows, by kind. */
async function ledgerKinds(w: World, accountId: string): Promise<Record<string, { sum: number; rows: number }>> {
  const rows = await w.db.sql`select kind, sum(amount)::int as sum, count(*)::int as rows from ledger
                              where account_id = ${accountId} group by kind`;
  return Object.fromEntries(rows.map((r) => [r.kind as string, { sum: r.sum as number, rows: r.rows as number }]));
}

async function until(cond: () => Promise<boolean>, ms = 20_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return true;
    await new Promise((res) => setTimeout(res, 25));
  }
  return false;
}

/** Waits until `n` conversions of the account have settled (each writes one release row). */
async function settled(w: World, accountId: string, n: number): Promise<boolean> {
  return until(async () => {
    const [r] = await w.db.sql`select count(*)::int as n from ledger where account_id = ${accountId} and kind = 'release'`;
    return (r!.n as number) >= n;
  });
}

const docs = mkdtempSync(path.join(os.tmpdir(), 'docpipe-credits-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));

/** A .docx that counts (its text runs are there) but cannot be converted (its XML is cut short). */
async function brokenDocx(): Promise<string> {
  const good = await buildPlain(docs, 'source.docx', ['Hello broken world', 'Second paragraph']);
  const files = unzipSync(readFileSync(good));
  const xml = strFromU8(files['word/document.xml']!);
  files['word/document.xml'] = strToU8(xml.slice(0, xml.indexOf('Second paragraph') + 20));
  const bad = path.join(docs, 'broken.docx');
  writeFileSync(bad, zipSync(files));
  return bad;
}

function docxPart(file: string, name: string): Blob {
  return new File([readFileSync(file)], name, { type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' });
}

for (const mode of storeModes()) {
  const redis = mode === 'postgres';
  t.test(`credits (${mode} + ${redis ? 'RedisGate' : 'LocalGate'})`, async (t) => {
    const held = new HeldExecutor();
    // Concurrency is raised for max so that the 500-submit burst is decided by money alone.
    const w = await startWorld(mode, { PLAN_OVERRIDES: JSON.stringify({ max: { concurrency: 1000 } }) }, { redis, executor: held });
    t.teardown(() => w.close());
    const gate = w.app.deps.gate;

    await t.test('500 concurrent submits against a balance of 37 admit exactly 37 and the rest get 402', async (t) => {
      const a = await w.newKey({ plan: 'max', credits: 37 });
      const results = await Promise.all(Array.from({ length: 500 }, (_, i) =>
        w.req('POST', '/v1/convert/text', { key: a.key, json: { text: `tiny ${i}` } })
          .then(async (res) => ({ status: res.status, body: await res.json() as Record<string, unknown> }))));
      const ok = results.filter((r) => r.status === 200 || r.status === 202);
      const refused = results.filter((r) => r.status === 402);
      t.equal(ok.length, 37, 'exactly 37 admitted');
      t.equal(refused.length, 463, 'every other one refused for money');
      t.ok(refused.every((r) => r.body.error === 'insufficient_credits' && PROBLEM_FIELDS.every((f) => f in r.body)));
      t.ok(ok.every((r) => (r.body.usage as ConvJ['usage']).credits_reserved === 1));
      t.ok(await settled(w, a.accountId, 37), 'all 37 settled');
      t.equal(await gate.balance(a.accountId), 0, 'the gate balance ends at 0');
      t.strictSame(await readLedger(w.db.sql, a.accountId), { balance: 0, reservations: [] }, 'the ledger agrees');
      t.strictSame(await ledgerKinds(w, a.accountId), {
        grant: { sum: 37, rows: 1 }, reserve: { sum: -37, rows: 37 }, release: { sum: 37, rows: 37 }, charge: { sum: -37, rows: 37 },
      });
      const [c] = await w.db.sql`select count(*)::int as n, sum(credits_charged)::int as charged from conversions where account_id = ${a.accountId}`;
      t.strictSame({ n: c!.n, charged: c!.charged }, { n: 37, charged: 37 }, 'one conversion per admitted submit, each charged 1');
    });

    await t.test('a conversion shows what it reserved, what it was charged and the balance left', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const res = await w.req('POST', '/v1/convert/text', { key: a.key, json: { texts: ['one', 'two', 'three'] } });
      t.equal(res.status, 200);
      const c = await res.json() as ConvJ;
      t.equal(c.status, 'completed');
      t.strictSame(c.usage, { credits_reserved: 3, credits_charged: 3, credits_remaining: 7 });
    });

    await t.test('a failed file is not charged: one good and one corrupt docx cost 1', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const good = await buildPlain(docs, 'good.docx', ['A perfectly fine paragraph.']);
      const fd = new FormData();
      fd.append('file', docxPart(good, 'good.docx'));
      fd.append('file', docxPart(await brokenDocx(), 'broken.docx'));
      const res = await w.req('POST', '/v1/convert/word', { key: a.key, body: fd });
      t.equal(res.status, 200);
      const c = await res.json() as ConvJ;
      t.equal(c.status, 'completed_with_errors');
      const sources = c.files.filter((f) => f.role === 'source');
      t.strictSame(sources.map((f) => [f.name, f.status, f.credits]), [['good.docx', 'completed', 1], ['broken.docx', 'failed', 0]]);
      t.strictSame(c.usage, { credits_reserved: 2, credits_charged: 1, credits_remaining: 9 });
      t.strictSame(await ledgerKinds(w, a.accountId), {
        grant: { sum: 10, rows: 1 }, reserve: { sum: -2, rows: 1 }, release: { sum: 2, rows: 1 }, charge: { sum: -1, rows: 1 },
      });
      t.equal((await readLedger(w.db.sql, a.accountId)).balance, 9);
    });

    await t.test('a conversion whose every file fails costs nothing', async (t) => {
      const a = await w.newKey({ credits: 5 });
      const fd = new FormData();
      fd.append('file', docxPart(await brokenDocx(), 'broken.docx'));
      const c = await (await w.req('POST', '/v1/convert/word', { key: a.key, body: fd })).json() as ConvJ;
      t.equal(c.status, 'failed');
      t.strictSame(c.usage, { credits_reserved: 1, credits_charged: 0, credits_remaining: 5 });
      t.notOk((await ledgerKinds(w, a.accountId)).charge, 'no charge row');
    });

    await t.test('a balance too low for the reservation is 402 insufficient_credits and changes nothing', async (t) => {
      const a = await w.newKey({ credits: 2 });
      const res = await w.req('POST', '/v1/convert/text', { key: a.key, json: { texts: ['a', 'b', 'c'] } });
      t.equal(res.status, 402);
      const p = await res.json() as Record<string, unknown>;
      t.equal(p.error, 'insufficient_credits');
      t.match(p.detail, /needs 3 credits; the available balance is 2/);
      t.equal(p.retryable, false);
      t.strictSame(await ledgerKinds(w, a.accountId), { grant: { sum: 2, rows: 1 } });
      const [c] = await w.db.sql`select count(*)::int as n from conversions where account_id = ${a.accountId}`;
      t.equal(c!.n, 0);
    });

    await t.test('Markdown rendering costs nothing and needs no credits', async (t) => {
      const a = await w.newKey({ credits: 0 });
      const res = await w.req('POST', '/v1/convert/markdown/html', { key: a.key, json: { markdown: '# free' } });
      t.equal(res.status, 200);
      const c = await res.json() as ConvJ;
      t.strictSame(c.usage, { credits_reserved: 0, credits_charged: 0, credits_remaining: 0 });
      t.strictSame(await ledgerKinds(w, a.accountId), {}, 'no ledger row at all');
    });

    await t.test('DELETE of a running conversion releases its reservation', async (t) => {
      const a = await w.newKey({ credits: 10 });
      held.hold();
      t.teardown(() => held.release());
      const res = await w.req('POST', '/v1/convert/text', { key: a.key, json: { texts: ['x', 'y'] }, headers: { prefer: 'respond-async' } });
      t.equal(res.status, 202);
      const c = await res.json() as ConvJ;
      t.equal(c.usage.credits_remaining, 8);
      t.equal(await gate.running(a.accountId), 1);
      const del = await w.req('DELETE', `/v1/conversions/${c.id}`, { key: a.key });
      t.equal(del.status, 200);
      t.equal(await gate.balance(a.accountId), 10, 'the reservation came back whole');
      t.equal(await gate.running(a.accountId), 0, 'and its slot');
      held.release();
      t.ok(await until(async () => held.waitingTasks === 0));
      t.strictSame(await ledgerKinds(w, a.accountId), {
        grant: { sum: 10, rows: 1 }, reserve: { sum: -2, rows: 1 }, release: { sum: 2, rows: 1 },
      }, 'released once, charged nothing, even after the cancelled work returned');
    });

    await t.test('after the gate loses everything mid-run, the balance is rebuilt from the ledger', async (t) => {
      const a = await w.newKey({ credits: 20 });
      held.hold();
      t.teardown(() => held.release());
      const submit = (text: string) => w.req('POST', '/v1/convert/text', { key: a.key, json: { text }, headers: { prefer: 'respond-async' } });
      for (const x of ['a', 'b', 'c']) t.equal((await submit(x)).status, 202);
      t.equal(await gate.balance(a.accountId), 17);
      t.equal(await gate.running(a.accountId), 3);

      await w.wipeGate(); // this world's keys only (or the LocalGate's memory): a FLUSHALL of our own
      t.equal(await gate.balance(a.accountId), null, 'the gate no longer holds the account');

      const fourth = await submit('d');
      t.equal(fourth.status, 202, 'the next submit rebuilds from the ledger');
      t.equal(await gate.balance(a.accountId), 16, 'balance = 20 granted - 4 reserved');
      t.equal(await gate.running(a.accountId), 4, 'the three open reservations came back with it');

      // Lose it again, then let the work finish: the settles meet an unloaded gate.
      await w.wipeGate();
      held.release();
      t.ok(await settled(w, a.accountId, 4));
      t.equal(await gate.balance(a.accountId), null);
      t.equal((await w.req('POST', '/v1/convert/text', { key: a.key, json: { text: 'e' } })).status, 200);
      t.ok(await settled(w, a.accountId, 5));
      t.equal(await gate.balance(a.accountId), 15, '5 conversions charged 1 each');
      t.equal(await gate.running(a.accountId), 0);
      t.strictSame(await readLedger(w.db.sql, a.accountId), { balance: 15, reservations: [] });
    });

    await t.test('a grant reaches a loaded gate at once', async (t) => {
      const a = await w.newKey({ credits: 1 });
      t.equal((await w.req('POST', '/v1/convert/text', { key: a.key, json: { text: 'x' } })).status, 200);
      t.equal(await gate.balance(a.accountId), 0);
      await w.grant(a.accountId, 5);
      t.equal(await gate.balance(a.accountId), 5);
      t.equal((await readLedger(w.db.sql, a.accountId)).balance, 5);
    });
  });
}
