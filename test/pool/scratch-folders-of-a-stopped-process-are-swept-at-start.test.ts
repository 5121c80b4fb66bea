// Scratch folders a killed process left under DATA_DIR/tmp are removed when a server starts,
// while those another live process may still use are kept: a folder of this host made by a
// process that no longer runs goes; one of a live process, or of another host, stays unless it
// is older than any task could be. The dead owner is a real process killed with SIGKILL.
// Both stores (the sweep runs at every start).
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { oneMode, startWorld } from '../helpers/world.js';

const host = os.hostname().replace(/[^A-Za-z0-9.-]/g, '-') || 'host';

/** A process that has run and been killed: its PID names no live process now. */
async function killedPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await new Promise((r) => child.once('spawn', r));
  const pid = child.pid!;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  return pid;
}

for (const mode of oneMode()) {
  t.test(`scratch folders of a stopped process are swept at start (${mode})`, async (t) => {
    const live = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    t.teardown(() => { live.kill('SIGKILL'); });
    await new Promise((r) => live.once('spawn', r));
    const dead = await killedPid();

    const dataDir = path.join(os.tmpdir(), `docpipe-scratch-${process.pid}-${mode}`);
    const tmp = path.join(dataDir, 'tmp');
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const folder = (name: string, ageMs = 0): string => {
      const dir = path.join(tmp, name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'page-1.png'), 'scratch');
      if (ageMs > 0) {
        const then = new Date(Date.now() - ageMs);
        utimesSync(dir, then, then);
      }
      return name;
    };
    const crashed = folder(`pool_${host}_${dead}_aB3dE9`);
    const running = folder(`pool_${host}_${live.pid}_Qw7rT2`);
    const otherHost = folder('pool_another-host_4242_Zx8cV1');
    const oldOtherHost = folder('pool_another-host_4243_Mn5bV6', 3 * 3600 * 1000);
    const oldUnnamed = folder('pool_Kj4hG2', 3 * 3600 * 1000);
    const notScratch = folder('in_upload_kept');

    const w = await startWorld(mode, { DATA_DIR: dataDir }, { pool: true });
    t.teardown(() => w.close());
    const left = readdirSync(tmp);
    t.notOk(left.includes(crashed), 'the folder of a killed process on this host is gone');
    t.notOk(left.includes(oldOtherHost), 'a folder of another host older than any task is gone');
    t.notOk(left.includes(oldUnnamed), 'an old folder of unknown owner is gone');
    t.ok(left.includes(running), 'the folder of a live process is kept');
    t.ok(left.includes(otherHost), 'a recent folder of another host is kept');
    t.ok(left.includes(notScratch), 'what is not a scratch folder is not touched');

    // The server's own tasks still get (and clean) their scratch folders.
    const res = await w.req('POST', '/v1/convert/text', { json: { text: 'after the sweep' } });
    t.equal(res.status, 200);
    const c = await res.json() as { files: Array<{ role: string; format: string | null; content: string | null }> };
    t.equal(c.files.find((f) => f.role === 'output' && f.format === 'markdown')?.content, 'after the sweep\n');
  });
}
