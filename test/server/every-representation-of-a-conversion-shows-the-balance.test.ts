// `usage.credits_remaining` is the account's balance in every representation of a conversion:
// the submit's answer, GET, the listing, the events stream's `done` and the webhook event.
import t from 'tap';
import { oneMode, startWorld } from '../helpers/world.js';
import { startReceiver } from '../webhooks/receiver.js';

interface Usage { credits_reserved: number; credits_charged: number; credits_remaining: number | null }
interface Conv { id: string; status: string; usage: Usage }

for (const mode of oneMode()) {
  t.test(`credits_remaining is the balance wherever the conversion is shown (${mode})`, async (t) => {
    const w = await startWorld(mode, { ALLOW_PRIVATE_NETWORK: '1' });
    t.teardown(() => w.close());
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const { key } = await w.newKey({ credits: 10 });
    const hook = await w.req('POST', '/v1/webhooks', { key, json: { url: rx.url, eventTypes: ['conversion.completed'] } });
    t.equal(hook.status, 201);

    const res = await w.req('POST', '/v1/convert/text', { key, json: { text: 'one credit' } });
    t.equal(res.status, 200);
    const submitted = await res.json() as Conv;
    t.equal(submitted.usage.credits_charged, 1);
    t.equal(submitted.usage.credits_remaining, 9, 'the submit answer');

    const got = await (await w.req('GET', `/v1/conversions/${submitted.id}`, { key })).json() as Conv;
    t.equal(got.usage.credits_remaining, 9, 'GET');
    const listed = await (await w.req('GET', '/v1/conversions', { key })).json() as { data: Conv[] };
    t.equal(listed.data[0]!.usage.credits_remaining, 9, 'the listing');

    const stream = await (await w.req('GET', `/v1/conversions/${submitted.id}/events`, { key })).text();
    const done = stream.split('\n\n').find((e) => e.startsWith('event: done'));
    t.ok(done, 'the stream ends with done');
    const doneConv = JSON.parse(done!.split('\ndata: ')[1]!) as Conv;
    t.equal(doneConv.usage.credits_remaining, 9, 'the events stream\'s done');

    const [delivery] = await rx.waitFor(1);
    const event = JSON.parse(delivery!.body) as { data: { object: Conv } };
    t.equal(event.data.object.id, submitted.id);
    t.equal(event.data.object.usage.credits_remaining, 9, 'the webhook event');
  });
}
