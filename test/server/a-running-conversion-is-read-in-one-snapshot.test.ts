// A conversion read while it runs: its `summary` and `status` agree with its files' statuses in
// the same answer, in GET of the conversion, in the listing and in the events stream, however
// its files move between the reads. Tasks are let through one at a time, each while reads are
// in flight, so that files change status during the reads.
import t from 'tap';
import { startWorld, storeModes, type World } from '../helpers/world.js';
import { InlineExecutor, type Executor, type Task } from '../../src/jobs/executor.js';
import type { RunResult } from '../../src/converters/registry.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Runs each task inline once let through by step(). */
class SteppedExecutor implements Executor {
  private readonly tmpDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-stepped-'));
  private readonly inner = new InlineExecutor({ tmpDir: this.tmpDir, allowPrivateNetwork: false });
  private waiting: Array<() => void> = [];
  private arrived: Array<() => void> = [];

  /** Lets one waiting task run; resolves false when none waits. */
  step(): boolean {
    const go = this.waiting.shift();
    go?.();
    return go !== undefined;
  }

  /** Resolves once a task waits to be let through. */
  someoneWaits(): Promise<void> {
    if (this.waiting.length > 0) return Promise.resolve();
    return new Promise((resolve) => this.arrived.push(resolve));
  }

  async run(task: Task, signal: AbortSignal, onProgress?: (done: number, total: number) => void): Promise<RunResult> {
    await new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      for (const tell of this.arrived.splice(0)) tell();
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
    return this.inner.run(task, signal, onProgress);
  }

  queued(): number {
    return 0;
  }

  async close(): Promise<void> {
    for (const go of this.waiting.splice(0)) go();
    rmSync(this.tmpDir, { recursive: true, force: true });
  }
}

interface Summary { sources: number; queued: number; running: number; completed: number; failed: number }
interface Conv { id: string; status: string; summary: Summary; files: Array<{ role: string; status: string }> }

const SOURCES = 24;
const TERMINAL = new Set(['completed', 'completed_with_errors', 'failed']);

/** What the answer's files say the summary and status must be; the disagreements found. */
function disagreements(c: Conv): string[] {
  const counted: Summary = { sources: 0, queued: 0, running: 0, completed: 0, failed: 0 };
  for (const f of c.files) {
    if (f.role !== 'source') continue;
    counted.sources++;
    counted[f.status as 'queued']++;
  }
  const out: string[] = [];
  if (JSON.stringify(counted) !== JSON.stringify(c.summary)) {
    out.push(`summary ${JSON.stringify(c.summary)} but files ${JSON.stringify(counted)}`);
  }
  const pending = counted.queued + counted.running;
  const expected = pending > 0
    ? (counted.running + counted.completed + counted.failed > 0 ? 'running' : 'queued')
    : counted.failed === 0 ? 'completed' : counted.completed === 0 ? 'failed' : 'completed_with_errors';
  if (c.status !== expected) out.push(`status ${c.status} but files ${JSON.stringify(counted)}`);
  return out;
}

async function readAll(w: World, id: string): Promise<Conv[]> {
  const one = () => w.req('GET', `/v1/conversions/${id}`).then((r) => r.json() as Promise<Conv>);
  const listed = () => w.req('GET', '/v1/conversions?limit=1').then(async (r) => (await r.json() as { data: Conv[] }).data[0]!);
  return Promise.all([one(), listed(), one(), listed(), one()]);
}

for (const mode of storeModes()) {
  t.test(`summary and status agree with the files in every read of a running conversion (${mode})`, async (t) => {
    const exec = new SteppedExecutor();
    const w = await startWorld(mode, {}, { executor: exec });
    t.teardown(() => w.close());

    const texts = Array.from({ length: SOURCES }, (_, i) => `source ${i}`);
    const res = await w.req('POST', '/v1/convert/text', { json: { texts }, headers: { prefer: 'respond-async' } });
    t.equal(res.status, 202);
    const { id } = await res.json() as Conv;

    const events = await w.req('GET', `/v1/conversions/${id}/events`);
    const streamed = events.text();

    const found: string[] = [];
    let reads = 0;
    let last: Conv | undefined;
    for (;;) {
      // One task goes through while five reads are on their way: its start and its end commit
      // during them.
      const stepped = exec.step();
      const answers = await readAll(w, id);
      reads += answers.length;
      for (const c of answers) found.push(...disagreements(c));
      last = answers[answers.length - 1];
      if (TERMINAL.has(last!.status)) break;
      // the last tasks may still be recording: read again shortly
      if (!stepped) await Promise.race([exec.someoneWaits(), new Promise((r) => setTimeout(r, 20))]);
    }
    t.equal(last!.status, 'completed');
    t.equal(last!.summary.completed, SOURCES);
    t.ok(reads >= SOURCES * 5, `read ${reads} times while it ran`);
    t.strictSame(found, [], 'no answer disagreed with itself');

    const progress = (await streamed).split('\n\n').filter((e) => e.startsWith('event: progress'));
    t.ok(progress.length > 1, 'the stream sent progress');
    for (const e of progress) {
      const data = JSON.parse(e.split('\ndata: ')[1]!) as { status: string; files: Array<{ status: string }> };
      const running = data.files.filter((f) => f.status === 'running' || f.status === 'completed').length;
      const pending = data.files.filter((f) => f.status === 'queued' || f.status === 'running').length;
      if (pending === 0) t.equal(data.status, 'completed', 'a stream event with every file done says completed');
      else if (running > 0) t.equal(data.status, 'running', 'a stream event with a file started says running');
    }
  });
}
