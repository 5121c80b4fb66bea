// A cheap submit (an authenticated Markdown render) costs the gate one Redis round trip: the
// rate limit script, which also reads the balance the answer shows (a render reserves nothing).
// A paid submit answered at once (202) costs two: the rate limit and the reservation, whose
// answer is the balance shown (no third call to read it); one that finishes in its request
// three: the settle answers the balance its 200 shows.
// Counted with MONITOR: commands a client sent (not those a script ran), filtered to this
// world's own key prefix (other tests share the Redis). MONITOR is read from a plain socket:
// ioredis's monitor() mistook a monitored line for a reply when the shared Redis was busy
// ("Command queue state error", an uncaught exception, and the test hung to tap's timeout).
import t from 'tap';
import type { Test } from 'tap';
import net from 'node:net';
import { Redis } from 'ioredis';
import { DEFAULT_CREDITS, REDIS_URL, startWorld, type World } from '../helpers/world.js';

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

  const ours = await commandsDuring(t, w, () => render(2));
  t.equal(ours.length, 1, `one command: ${JSON.stringify(ours.map((c) => c.slice(0, 3)))}`);
  t.match(ours[0]![0]!.toLowerCase(), /^evalsha$|^eval$/, 'the one command is a script');
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

  let c: Awaited<ReturnType<typeof submit>> | undefined;
  const ours = await commandsDuring(t, w, async () => { c = await submit(2); });
  t.equal(ours.length, 2, `two commands: ${JSON.stringify(ours.map((x) => x.slice(0, 3)))}`);
  t.ok(ours.every((x) => /^evalsha$|^eval$/.test(x[0]!.toLowerCase())), 'both are scripts');
  t.ok(c!.usage.credits_reserved > 0, 'it reserved credits');
  const read = await (await w.req('GET', `/v1/conversions/${c!.id}`)).json() as NonNullable<typeof c>;
  t.equal(c!.usage.credits_remaining, read.usage.credits_remaining, 'the balance answered is the gate\'s after the reservation');
});

t.test('a paid submit that finishes in its request reaches Redis three times: rate limit, reservation, settle', async (t) => {
  const w = await startWorld('postgres', {}, { redis: true });
  t.teardown(() => w.close());
  const submit = async (n: number): Promise<{ id: string; status: string; usage: { credits_charged: number; credits_remaining: number } }> => {
    const res = await w.req('POST', '/v1/convert/html?wait=30', { json: { html: `<h1>Paid ${n}</h1><p>Some text.</p>` } });
    t.equal(res.status, 200);
    return await res.json() as { id: string; status: string; usage: { credits_charged: number; credits_remaining: number } };
  };
  await submit(1); // loads the account into the gate and the scripts into Redis

  let c: Awaited<ReturnType<typeof submit>> | undefined;
  const ours = await commandsDuring(t, w, async () => { c = await submit(2); });
  t.equal(ours.length, 3, `three commands: ${JSON.stringify(ours.map((x) => x.slice(0, 3)))}`);
  t.ok(ours.every((x) => /^evalsha$|^eval$/.test(x[0]!.toLowerCase())), 'all are scripts (no read of the balance after the settle)');
  t.equal(c!.status, 'completed');
  t.ok(c!.usage.credits_charged > 0, 'it was charged');
  const read = await (await w.req('GET', `/v1/conversions/${c!.id}`)).json() as NonNullable<typeof c>;
  t.equal(c!.usage.credits_remaining, read.usage.credits_remaining, 'the balance answered is the gate\'s after the settle');
  t.equal(c!.usage.credits_remaining, DEFAULT_CREDITS - 2 * c!.usage.credits_charged, 'both charges taken from the grant');
});

/** The commands clients sent on this world's keys while `act` ran, bracketed by a marker read
 *  before and after it (MONITOR reports commands in the order Redis ran them). */
async function commandsDuring(t: Test, w: World, act: () => Promise<void>): Promise<string[][]> {
  const monitor = await startMonitor(REDIS_URL);
  const marker = new Redis(REDIS_URL);
  t.teardown(async () => { monitor.close(); await marker.quit(); });
  const markerKey = `${w.redisPrefix!}marker`;
  const commands: string[][] = [];
  monitor.onCommand((args, source) => {
    // a command a script ran is part of its EVALSHA's round trip
    if (/lua/.test(source)) return;
    if (args.some((a) => a.startsWith(w.redisPrefix!))) commands.push(args);
  });
  await marker.get(markerKey);
  await until(() => commands.some((c) => c.includes(markerKey)));
  commands.length = 0;
  await act();
  await marker.get(markerKey);
  await until(() => commands.some((c) => c.includes(markerKey)));
  return commands.filter((c) => !c.includes(markerKey));
}

/** MONITOR on a connection of its own: each command Redis runs, with its source ("lua" for a
 *  script's, else the client's address). Resolves once Redis has answered OK. */
function startMonitor(url: string): Promise<{ onCommand(f: (args: string[], source: string) => void): void; close(): void }> {
  const { hostname, port } = new URL(url);
  const listeners: Array<(args: string[], source: string) => void> = [];
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port || 6379), hostname);
    let buffered = '';
    let ok = false;
    socket.setEncoding('utf8');
    socket.on('error', reject);
    socket.on('connect', () => socket.write('MONITOR\r\n'));
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      let end: number;
      while ((end = buffered.indexOf('\r\n')) >= 0) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (!ok) {
          if (line !== '+OK') { reject(new Error(`MONITOR answered ${line}`)); socket.destroy(); return; }
          ok = true;
          resolve({ onCommand: (f) => { listeners.push(f); }, close: () => socket.destroy() });
          continue;
        }
        // +1700000000.123456 [0 127.0.0.1:5000] "evalsha" "abc" "3" "key"
        const m = /^\+\S+ \[\d+ ([^\]]+)\] (.*)$/.exec(line);
        if (!m) continue;
        const args = [...m[2]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((x) => x[1]!);
        for (const f of listeners) f(args, m[1]!);
      }
    });
  });
}

async function until(done: () => boolean): Promise<void> {
  // a generous bound that only a hang reaches
  for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!done()) throw new Error('MONITOR did not report the commands');
}
