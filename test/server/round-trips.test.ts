// A cheap submit (an authenticated Markdown render) costs the gate one Redis round trip: the
// rate limit script, which also reads the balance the answer shows (a render reserves nothing).
// A paid submit answered at once (202) costs two: the rate limit and the reservation, whose
// answer is the balance shown (no third call to read it).
// Counted with MONITOR: commands a client sent (not those a script ran), filtered to this
// world's own key prefix (other tests share the Redis).
import t from 'tap';
import { Redis } from 'ioredis';
import { DEFAULT_CREDITS, REDIS_URL, startWorld } from '../helpers/world.js';

t.test('a cheap submit reaches Redis once', async (t) => {
  const w = await startWorld('postgres', {}, { redis: true });
  t.teardown(() => w.close());
  const render = async (n: number): Promise<void> => {
    const res = await w.req('POST', '/v1/convert/markdown/html', { json: { markdown: `# Note ${n}\n\nSome *text*.` } });
    t.equal(res.status, 200);
    const c = await res.json() as { files: Array<{ role: string; format?: string; content?: string }> };
    t.equal((c as unknown as { usage: { credits_remaining: number } }).usage.credits_remaining, DEFAULT_CREDITS, 'the balance answered');
    t.match(c.files.find((f) => f.role === 'output' && f.format === 'html')!.content, `<h1>Note ${n}</h1>`);
  };
  // The first request loads the account's balance into the gate and the scripts into Redis.
  await render(1);

  // monitor() opens a connection of its own beside its client's: both are closed at the end
  const client = new Redis(REDIS_URL);
  const monitor = await client.monitor();
  const commands: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    // a command a script ran is part of its EVALSHA's round trip
    if (/lua/.test(source)) return;
    if (args.some((a) => a.startsWith(w.redisPrefix!))) commands.push(args);
  });
  // MONITOR sees a command of its own connection before it sees ours: this one marks the start.
  const marker = new Redis(REDIS_URL);
  await marker.get(`${w.redisPrefix!}marker`);
  await until(() => commands.length === 1);
  commands.length = 0;

  await render(2);
  await marker.get(`${w.redisPrefix!}marker`);
  await until(() => commands.some((c) => c.includes(`${w.redisPrefix!}marker`)));
  const ours = commands.filter((c) => !c.includes(`${w.redisPrefix!}marker`));
  t.equal(ours.length, 1, `one command: ${JSON.stringify(ours.map((c) => c.slice(0, 3)))}`);
  t.match(ours[0]![0]!.toLowerCase(), /^evalsha$|^eval$/, 'the one command is a script');
  monitor.disconnect();
  client.disconnect();
  await marker.quit();
});

t.test('a paid submit answered at once reaches Redis twice: rate limit, reservation', async (t) => {
  const w = await startWorld('postgres', {}, { redis: true });
  t.teardown(() => w.close());
  await w.app.deps.conversions.runner!.stop(0); // no job runs, so none settles in the window
  const submit = async (n: number): Promise<{ id: string; usage: { credits_reserved: number; credits_remaining: number } }> => {
    const res = await w.req('POST', '/v1/convert/html?wait=0', { json: { html: `<h1>Paid ${n}</h1>` } });
    t.equal(res.status, 202);
    return await res.json() as { id: string; usage: { credits_reserved: number; credits_remaining: number } };
  };
  await submit(1); // loads the account into the gate and the scripts into Redis

  const client = new Redis(REDIS_URL);
  const monitor = await client.monitor();
  const commands: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (/lua/.test(source)) return;
    if (args.some((a) => a.startsWith(w.redisPrefix!))) commands.push(args);
  });
  const marker = new Redis(REDIS_URL);
  await marker.get(`${w.redisPrefix!}marker`);
  await until(() => commands.length === 1);
  commands.length = 0;

  const c = await submit(2);
  await marker.get(`${w.redisPrefix!}marker`);
  await until(() => commands.some((x) => x.includes(`${w.redisPrefix!}marker`)));
  const ours = commands.filter((x) => !x.includes(`${w.redisPrefix!}marker`));
  t.equal(ours.length, 2, `two commands: ${JSON.stringify(ours.map((x) => x.slice(0, 3)))}`);
  t.ok(ours.every((x) => /^evalsha$|^eval$/.test(x[0]!.toLowerCase())), 'both are scripts');
  t.ok(c.usage.credits_reserved > 0, 'it reserved credits');
  const read = await (await w.req('GET', `/v1/conversions/${c.id}`)).json() as typeof c;
  t.equal(c.usage.credits_remaining, read.usage.credits_remaining, 'the balance answered is the gate\'s after the reservation');
  monitor.disconnect();
  client.disconnect();
  await marker.quit();
});

async function until(done: () => boolean): Promise<void> {
  // a generous bound that only a hang reaches
  for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!done()) throw new Error('MONITOR did not report the commands');
}
