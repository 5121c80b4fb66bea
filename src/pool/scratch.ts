// The pool's scratch folders under DATA_DIR/tmp: one per task, named after the host and the
// process that made it (pool_<host>_<pid>_…), removed when the task ends. A process killed
// mid-task leaves its folders behind; sweepScratch, run at start, removes those no live process
// owns. Several processes may share a DATA_DIR (Postgres mode, shared storage), so a folder is
// taken only when its owner is provably gone: made on this host by a process that no longer
// runs (or by this process's own PID, reused after a restart — this process has made none yet),
// or, from any host, older than SCRATCH_MAX_AGE_MS, far past any task's time limit.
import { readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** Older than this, a scratch folder outlives any task that could own it. */
export const SCRATCH_MIN_AGE_MS = 60 * 60 * 1000;

/** This host's name as it appears in folder names (no underscore, which separates the parts). */
function hostPart(): string {
  return os.hostname().replace(/[^A-Za-z0-9.-]/g, '-') || 'host';
}

/** The prefix of this process's scratch folders (the pool adds a random part). */
export function scratchPrefix(tmpDir: string): string {
  return path.join(tmpDir, `pool_${hostPart()}_${process.pid}_`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // it runs, as another user
  }
}

/** Removes the scratch folders no live process owns (see above); says how many. Call it at
 *  start, before this process runs any task. `maxTaskMs` is the pool's task time limit. */
export async function sweepScratch(tmpDir: string, maxTaskMs: number): Promise<number> {
  const host = hostPart();
  const oldest = Date.now() - Math.max(SCRATCH_MIN_AGE_MS, 2 * maxTaskMs);
  let removed = 0;
  for (const name of await readdir(tmpDir).catch(() => [] as string[])) {
    if (!name.startsWith('pool_')) continue;
    const owner = /^pool_([^_]+)_(\d+)_[^_]+$/.exec(name);
    const orphan = owner !== null && owner[1] === host
      && (Number(owner[2]) === process.pid || !alive(Number(owner[2])));
    const stale = !orphan && await stat(path.join(tmpDir, name)).then((s) => s.mtimeMs < oldest, () => false);
    if (!orphan && !stale) continue;
    await rm(path.join(tmpDir, name), { recursive: true, force: true });
    removed++;
  }
  return removed;
}
