import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Starts `npm start`'s entry in embedded mode and returns what it printed before listening. */
function start(dataDir: string): Promise<{ out: string; port: number; stop: () => Promise<number | null> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import=tsx', 'src/main.ts'], {
      env: { ...process.env, DATABASE_URL: '', REDIS_URL: '', DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_PRETTY: '0', POOL_THREADS: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no start: ${out}`)), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"port":(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({
          out, port: Number(m[1]),
          stop: () => new Promise((r) => { child.once('exit', (code) => r(code)); child.kill('SIGTERM'); }),
        });
      }
    });
  });
}

t.test('the first embedded start creates a dev account and prints its key once', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-first-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await start(dataDir);
  const key = /API key \(shown once, keep it\): (dp_live_\w+)/.exec(first.out)?.[1];
  t.ok(key, 'the key is printed');
  t.match(first.out, /10000 credits/);
  const res = await fetch(`http://127.0.0.1:${first.port}/v1/convert/markdown/html`, {
    method: 'POST', headers: { 'x-api-key': key!, 'content-type': 'application/json' }, body: JSON.stringify({ markdown: '# it works' }),
  });
  t.equal(res.status, 200);
  t.match(await res.text(), '<h1>it works</h1>');
  t.equal(await first.stop(), 0, 'SIGTERM stops it cleanly');

  const second = await start(dataDir);
  t.notMatch(second.out, /API key/, 'a restart prints no key');
  const again = await fetch(`http://127.0.0.1:${second.port}/v1/conversions`, { headers: { 'x-api-key': key! } });
  t.equal(again.status, 200, 'the same key still works: the data persisted');
  t.equal(((await again.json()) as { data: unknown[] }).data.length, 1);
  t.equal(await second.stop(), 0);
});
