// Idempotency-Key on submit (DESIGN.md §5): one conversion and one reservation however many
// retries arrive at once; another request under a used key is 422; the claim survives the gate
// losing its state because Postgres holds it too. Postgres + RedisGate and embedded + LocalGate.
import t from 'tap';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { HeldExecutor, startWorld, storeModes, type World } from '../helpers/world.js';
import { readLedger } from '../../src/billing/ledger.js';

interface ConvJ { id: string; status: string; usage: { credits_reserved: number; credits_charged: number } }

async function reserveRows(w: World, accountId: string): Promise<number> {
  const [r] = await w.db.sql`select count(*)::int as n from ledger where account_id = ${accountId} and kind = 'reserve'`;
  return r!.n as number;
}

async function conversions(w: World, accountId: string): Promise<string[]> {
  const rows = await w.db.sql`select id from conversions where account_id = ${accountId}`;
  return rows.map((r) => r.id as string);
}

for (const mode of storeModes()) {
  const redis = mode === 'postgres';
  t.test(`idempotency (${mode} + ${redis ? 'RedisGate' : 'LocalGate'})`, async (t) => {
    const held = new HeldExecutor();
    const w = await startWorld(mode, {}, { redis, executor: held });
    t.teardown(() => w.close());
    const submit = (key: string, idem: string | undefined, json: unknown, p = '/v1/convert/text', headers: Record<string, string> = {}) =>
      w.req('POST', p, { key, json, headers: { ...(idem === undefined ? {} : { 'idempotency-key': idem }), ...headers } });

    await t.test('50 concurrent retries with one key make one conversion, one reservation and 49 replays', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const rs = await Promise.all(Array.from({ length: 50 }, () => submit(a.key, 'order-1', { text: 'same words' })));
      t.ok(rs.every((r) => r.status === 200 || r.status === 202), 'every retry answered with the conversion');
      const bodies = await Promise.all(rs.map((r) => r.json() as Promise<ConvJ>));
      t.equal(new Set(bodies.map((b) => b.id)).size, 1, 'one conversion id in every answer');
      const replayed = rs.filter((r) => r.headers.get('idempotent-replayed') === 'true');
      t.equal(replayed.length, 49, '49 replays say so');
      t.equal(rs.filter((r) => r.headers.get('idempotent-replayed') === null).length, 1, 'the original does not');
      t.strictSame(await conversions(w, a.accountId), [bodies[0]!.id]);
      t.equal(await reserveRows(w, a.accountId), 1, 'one reservation in the ledger');
      t.ok(bodies.every((b) => b.usage.credits_reserved === 1));
    });

    await t.test('a replay after the conversion finished answers 200 with it and charges nothing more', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const first = await submit(a.key, 'k-done', { text: 'finish me' });
      t.equal(first.status, 200);
      const c = await first.json() as ConvJ;
      t.equal(c.status, 'completed');
      const again = await submit(a.key, 'k-done', { text: 'finish me' }, '/v1/convert/text', { prefer: 'respond-async' });
      t.equal(again.status, 200, 'finished, so 200 even though the retry asked for async');
      t.equal(again.headers.get('idempotent-replayed'), 'true');
      t.equal((await again.json() as ConvJ).id, c.id);
      t.equal((await readLedger(w.db.sql, a.accountId)).balance, 9);
    });

    await t.test('a replay of a conversion still running answers 202', async (t) => {
      const a = await w.newKey({ credits: 10 });
      held.hold();
      t.teardown(() => held.release());
      const first = await submit(a.key, 'k-async', { text: 'later' }, '/v1/convert/text', { prefer: 'respond-async' });
      t.equal(first.status, 202);
      const id = (await first.json() as ConvJ).id;
      const again = await submit(a.key, 'k-async', { text: 'later' }, '/v1/convert/text', { prefer: 'respond-async' });
      t.equal(again.status, 202);
      t.equal(again.headers.get('idempotent-replayed'), 'true');
      t.equal((await again.json() as ConvJ).id, id);
    });

    await t.test('the same key with another body is 422 idempotency_key_reused', async (t) => {
      const a = await w.newKey({ credits: 10 });
      t.equal((await submit(a.key, 'k-1', { text: 'one body' })).status, 200);
      for (const other of [{ text: 'another body' }, { text: 'one body', formats: ['text'] }, { text: 'one body', metadata: { x: 1 } }]) {
        const res = await submit(a.key, 'k-1', other);
        t.equal(res.status, 422, JSON.stringify(other));
        t.equal((await res.json() as { error: string }).error, 'idempotency_key_reused');
      }
      t.equal((await conversions(w, a.accountId)).length, 1);
      t.equal(await reserveRows(w, a.accountId), 1);
    });

    await t.test('options are compared by value, not by how the JSON was written', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const body1 = '{"text":"order","metadata":{"a":1,"b":2},"formats":["markdown","text"]}';
      const body2 = '{"formats":["markdown","text"],"metadata":{"b":2,"a":1},"text":"order"}';
      const send = (body: string) => w.req('POST', '/v1/convert/text', { key: a.key, body, headers: { 'content-type': 'application/json', 'idempotency-key': 'k-order' } });
      t.equal((await send(body1)).status, 200);
      const again = await send(body2);
      t.equal(again.status, 200);
      t.equal(again.headers.get('idempotent-replayed'), 'true');
    });

    await t.test('a key is scoped to its endpoint and its account', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const b = await w.newKey({ credits: 10 });
      const one = await (await submit(a.key, 'shared', { text: 'x' })).json() as ConvJ;
      const html = await submit(a.key, 'shared', { html: '<p>x</p>' }, '/v1/convert/html');
      t.equal(html.status, 200);
      t.equal(html.headers.get('idempotent-replayed'), null, 'another endpoint: a new conversion');
      const other = await submit(b.key, 'shared', { text: 'x' });
      t.equal(other.headers.get('idempotent-replayed'), null, 'another account: a new conversion');
      t.not((await other.json() as ConvJ).id, one.id);
    });

    await t.test('a key outside 1 to 255 characters is 400 invalid_request', async (t) => {
      const a = await w.newKey({ credits: 10 });
      for (const key of ['', 'k'.repeat(256)]) {
        const res = await submit(a.key, key, { text: 'x' });
        t.equal(res.status, 400, `length ${key.length}`);
        t.equal((await res.json() as { error: string }).error, 'invalid_request');
      }
      t.equal((await submit(a.key, 'k'.repeat(255), { text: 'x' })).status, 200, '255 characters are fine');
    });

    await t.test('after the gate lost its claims, Postgres still replays the key and refuses another body', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const first = await (await submit(a.key, 'k-flush', { text: 'survive' })).json() as ConvJ;
      await w.wipeGate();
      const rs = await Promise.all(Array.from({ length: 10 }, () => submit(a.key, 'k-flush', { text: 'survive' })));
      t.ok(rs.every((r) => r.status === 200 && r.headers.get('idempotent-replayed') === 'true'), 'every retry replays');
      t.ok((await Promise.all(rs.map((r) => r.json() as Promise<ConvJ>))).every((c) => c.id === first.id));
      const other = await submit(a.key, 'k-flush', { text: 'different' });
      t.equal(other.status, 422);
      t.strictSame(await conversions(w, a.accountId), [first.id], 'still one conversion');
      t.equal(await reserveRows(w, a.accountId), 1);
      t.equal(await w.app.deps.gate.balance(a.accountId), 9, 'the losers gave their reservations back');
      t.equal(await w.app.deps.gate.running(a.accountId), 0);
    });

    await t.test('a submit whose insert fails releases its reservation, and its key can be retried', async (t) => {
      const a = await w.newKey({ credits: 10 });
      // Sabotage: the conversion insert fails after the gate reserved (and claimed the key).
      await w.db.sql`alter table conversions add constraint sabotage check (metadata is null or not metadata ? 'sabotage')`;
      const failed = await submit(a.key, 'k-broken', { text: 'doomed', metadata: { sabotage: true } });
      t.equal(failed.status, 500);
      t.equal(await w.app.deps.gate.balance(a.accountId), 10, 'the reservation was given back');
      t.equal(await w.app.deps.gate.running(a.accountId), 0, 'and its slot');
      t.strictSame(await conversions(w, a.accountId), []);
      await w.db.sql`alter table conversions drop constraint sabotage`;

      // The gate still names the conversion that never was; Postgres has no claim: after a short
      // wait for a commit that never comes, the retry goes through and creates it once.
      const retry = await submit(a.key, 'k-broken', { text: 'doomed', metadata: { sabotage: true } });
      t.equal(retry.status, 200);
      t.equal(retry.headers.get('idempotent-replayed'), null);
      const id = (await retry.json() as ConvJ).id;
      t.strictSame(await conversions(w, a.accountId), [id]);
      const again = await submit(a.key, 'k-broken', { text: 'doomed', metadata: { sabotage: true } });
      t.equal(again.headers.get('idempotent-replayed'), 'true');
      t.equal((await again.json() as ConvJ).id, id);
      t.equal(await reserveRows(w, a.accountId), 1);
      t.equal((await readLedger(w.db.sql, a.accountId)).balance, 9);
    });

    await t.test('Markdown rendering honours the key too, without the gate', async (t) => {
      const a = await w.newKey({ credits: 0 });
      const rs = await Promise.all(Array.from({ length: 10 }, () => submit(a.key, 'render-1', { markdown: '# hi' }, '/v1/convert/markdown/html')));
      const original = rs.filter((r) => r.headers.get('idempotent-replayed') === null);
      t.equal(original.length, 1);
      t.equal(original[0]!.status, 200, 'the original waited for its result');
      t.ok(rs.every((r) => r.status === 200 || r.status === 202), 'replays answer the conversion as it is: 200 or 202');
      t.equal((await conversions(w, a.accountId)).length, 1);
    });

    await t.test('a replayed multipart request leaves no staged file behind', async (t) => {
      const a = await w.newKey({ credits: 10 });
      const form = () => {
        const fd = new FormData();
        fd.append('file', new File(['multipart words'], 'a.txt', { type: 'text/plain' }));
        return fd;
      };
      const send = () => w.req('POST', '/v1/convert/text', { key: a.key, body: form(), headers: { 'idempotency-key': 'k-mp' } });
      t.equal((await send()).status, 200);
      const again = await send();
      t.equal(again.headers.get('idempotent-replayed'), 'true');
      const tmp = path.join(w.dataDir, 'tmp');
      t.ok(await (async () => {
        for (let i = 0; i < 100; i++) {
          if (readdirSync(tmp).length === 0) return true;
          await new Promise((r) => setTimeout(r, 20));
        }
        return false;
      })(), 'DATA_DIR/tmp is empty');
    });
  });
}
