// A job writes its progress to its row every 500 ms from that long after its start: a
// conversion that ends sooner writes none (its outcome follows at once, and two commits per
// document are spared), a longer one shows its pages done while it runs.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { InlineExecutor, type Executor, type Task } from '../../src/jobs/executor.js';
import type { RunResult } from '../../src/converters/registry.js';
import { oneMode, startWorld } from '../helpers/world.js';

/** Runs text conversions inline, reporting the progress a test scripts for them. */
class ScriptedProgress implements Executor {
  private readonly tmpDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-progress-'));
  private readonly inner = new InlineExecutor({ tmpDir: this.tmpDir, allowPrivateNetwork: false });
  script: (report: (done: number, total: number) => void) => Promise<void> = async () => {};

  async run(task: Task, signal: AbortSignal, onProgress: (done: number, total: number) => void = () => {}): Promise<RunResult> {
    await this.script(onProgress);
    return this.inner.run(task, signal);
  }

  queued(): number {
    return 0;
  }

  async close(): Promise<void> {
    rmSync(this.tmpDir, { recursive: true, force: true });
  }
}

interface Conv { id: string; status: string; files: Array<{ role: string; status: string; progress?: { pages_done: number; pages_total: number | null } }> }

for (const mode of oneMode()) {
  t.test(`progress rows (${mode})`, async (t) => {
    const exec = new ScriptedProgress();
    const w = await startWorld(mode, {}, { executor: exec });
    t.teardown(async () => { await w.close(); await exec.close(); });
    const progressOf = async (id: string): Promise<number> => {
      const [row] = await w.db.sql`select progress_done from jobs where conversion_id = ${id}`;
      return Number(row?.progress_done ?? -1);
    };

    await t.test('a conversion that ends within the first 500 ms writes no progress', async (t) => {
      exec.script = async (report) => { report(1, 2); report(2, 2); };
      const res = await w.req('POST', '/v1/convert/text', { json: { text: 'quick words' } });
      const c = await res.json() as Conv;
      t.equal(c.status, 'completed');
      t.equal(await progressOf(c.id), 0, 'its job row was never written with progress');
    });

    await t.test('a longer conversion shows its pages done while it runs, and all of them at its end', async (t) => {
      let release!: () => void;
      const released = new Promise<void>((r) => { release = r; });
      exec.script = async (report) => {
        report(1, 3); // within the first 500 ms: not written
        await new Promise((r) => setTimeout(r, 600));
        report(2, 3); // past them: written
        await released;
        report(3, 3); // the end of a conversion that wrote progress: written
      };
      const res = await w.req('POST', '/v1/convert/text?wait=0', { json: { text: 'slow words' } });
      const c = await res.json() as Conv;
      let seen: Conv | undefined;
      for (let i = 0; i < 500; i++) {
        seen = await (await w.req('GET', `/v1/conversions/${c.id}`)).json() as Conv;
        if ((seen.files[0]?.progress?.pages_done ?? 0) > 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      t.match(seen!.files[0], { role: 'source', status: 'running', progress: { pages_done: 2, pages_total: 3 } }, 'GET shows 2 of 3 pages done');
      release();
      for (let i = 0; i < 500 && (await progressOf(c.id)) !== 3; i++) await new Promise((r) => setTimeout(r, 20));
      t.equal(await progressOf(c.id), 3, 'the last page was written too');
    });
  });
}
