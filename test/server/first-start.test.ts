import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SOURCE_ENTRY, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/** Starts the server from its sources in embedded mode; `printed` is what it printed before listening. */
function start(dataDir: string): Promise<ServerProcess> {
  return startServerProcess(SOURCE_ENTRY, { DATABASE_URL: '', REDIS_URL: '', DATA_DIR: dataDir, POOL_THREADS: '1' }, 30_000);
}

t.test('the first embedded start creates a dev account and prints its key once', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-first-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await start(dataDir);
  const key = /API key \(shown once, keep it\): (dp_live_\w+)/.exec(first.printed)?.[1];
  t.ok(key, 'the key is printed');
  t.match(first.printed, /10000 credits/);
  const res = await fetch(`http://127.0.0.1:${first.port}/v1/convert/markdown/html`, {
    method: 'POST', headers: { 'x-api-key': key!, 'content-type': 'application/json' }, body: JSON.stringify({ markdown: '# it works' }),
  });
  t.equal(res.status, 200);
  t.match(await res.text(), '<h1>it works</h1>');
  t.equal(await first.stop(), 0, 'SIGTERM stops it cleanly');

  const second = await start(dataDir);
  t.notMatch(second.printed, /API key/, 'a restart prints no key');
  const again = await fetch(`http://127.0.0.1:${second.port}/v1/conversions`, { headers: { 'x-api-key': key! } });
  t.equal(again.status, 200, 'the same key still works: the data persisted');
  t.equal(((await again.json()) as { data: unknown[] }).data.length, 1);
  t.equal(await second.stop(), 0);
});
