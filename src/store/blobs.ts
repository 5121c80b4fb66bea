// Document bytes on disk under DATA_DIR: tmp/ for request bodies being received, blobs/ for
// sources and large outputs. A blob's name is relative to blobs/, so DATA_DIR can move.
//
// A blob and its row must come and go together, but a file system and a database cannot commit
// together, and a process can die between the two. So blobs of conversions move through
// pending/ (same file system: renames): a new blob is staged there before its row's transaction
// and placed (renamed into blobs/) after the commit; a blob whose rows are being deleted is moved
// back there before the delete and discarded after it. Whatever a crash (or a lost commit answer)
// leaves in pending/ is resolved by the row alone (resolvePending): placed when its row exists,
// removed when it does not. A pending entry is `<encoded name>~<token>`: one per attempt, so two
// attempts at the same blob never touch each other's file.
//
// A committed row promises its blob's bytes: Postgres's commit waits for its own WAL only, and
// the kernel holds written pages for up to half a minute before it writes them back, so a power
// cut after the commit could leave a finished conversion whose document is empty or gone. So a
// blob is on the disk before its row's transaction starts:
// - staging flushes the file's bytes (fdatasync), then pending/ (fsync, for the new name);
// - an upload's part written in its place is flushed there before its row, with the
//   directories it was made in (flushPlaced);
// - the outputs a pool thread wrote to pending/ are flushed here (flushStaged), off that
//   thread, which goes on to its next conversion instead of waiting for the disk.
// Placing after the commit needs no flush: a rename a crash undid leaves the blob in pending/,
// where the sweep finds its row and places it again. Flushes of one directory asked for while
// another runs are one fsync after it (flushDir): concurrent submits share it.
import { mkdirSync } from 'node:fs';
import { open, readdir, rename, rm, stat, unlink, writeFile, copyFile } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/** A blob waiting in pending/ for its row's transaction. */
export interface Pending {
  name: string;
  path: string;
}

/** How bytes and names reach the disk. A test wraps it to see what was flushed, and when. */
export interface DiskFlush {
  /** The file's bytes (fdatasync). */
  file(file: string): Promise<void>;
  /** The directory's entries (fsync): a name made or renamed in it survives a crash. */
  dir(dir: string): Promise<void>;
}

/** fdatasync and fsync through a descriptor opened for reading (Linux flushes through any). */
export const diskFlush: DiskFlush = {
  file: (file) => flushed(file, (fh) => fh.datasync()),
  dir: (dir) => flushed(dir, (fh) => fh.sync()),
};

async function flushed(p: string, flush: (fh: Awaited<ReturnType<typeof open>>) => Promise<void>): Promise<void> {
  const fh = await open(p, 'r');
  try {
    await flush(fh);
  } finally {
    await fh.close();
  }
}

/** A directory's flush: the one running, and the next, shared by whoever asks before it starts. */
interface DirFlush {
  running?: Promise<void>;
  next?: Promise<void>;
}

export class Blobs {
  readonly tmpDir: string;
  readonly root: string;
  readonly pendingDir: string;
  /** Replaceable (tests see the order of flushes and commits through it). */
  flush: DiskFlush = diskFlush;
  private dirFlushes = new Map<string, DirFlush>();

  constructor(dataDir: string) {
    this.tmpDir = path.resolve(dataDir, 'tmp');
    this.root = path.resolve(dataDir, 'blobs');
    this.pendingDir = path.resolve(dataDir, 'pending');
    mkdirSync(this.tmpDir, { recursive: true });
    mkdirSync(this.root, { recursive: true });
    mkdirSync(this.pendingDir, { recursive: true });
  }

  /** The blob name for a file of an account. */
  nameFor(accountId: string, fileId: string): string {
    return `${accountId}/${fileId}`;
  }

  pathOf(name: string): string {
    const p = path.resolve(this.root, name);
    if (!p.startsWith(this.root + path.sep)) throw new Error(`blob name escapes the store: ${name}`);
    return p;
  }

  /** Moves a received temp file into the store (same filesystem: a rename). */
  async adopt(tmpPath: string, name: string): Promise<string> {
    const target = this.pathOf(name);
    mkdirSync(path.dirname(target), { recursive: true });
    await moveFile(tmpPath, target);
    return target;
  }

  /** Writes a blob; a write that fails (a full disk) leaves no partial file behind. */
  async write(name: string, content: string | Buffer): Promise<string> {
    const target = this.pathOf(name);
    mkdirSync(path.dirname(target), { recursive: true });
    try {
      await writeFile(target, content);
    } catch (err) {
      await rm(target, { force: true });
      throw err;
    }
    return target;
  }

  async remove(names: string[]): Promise<void> {
    await Promise.all(names.map((n) => rm(this.pathOf(n), { force: true })));
  }

  /** A new place in pending/ for blob `name` (nothing is written). */
  pendingEntry(name: string): Pending {
    this.pathOf(name); // refuses a name that escapes the store
    return { name, path: path.join(this.pendingDir, `${encodeURIComponent(name)}~${randomBytes(6).toString('hex')}`) };
  }

  /** Moves a received temp file to pending/ as blob `name`, on the disk, before its row's
   *  transaction; nothing is left in pending/ on failure. */
  async stage(tmpPath: string, name: string): Promise<Pending> {
    const p = this.pendingEntry(name);
    await moveFile(tmpPath, p.path);
    await this.flushStaged(p);
    return p;
  }

  /** Writes blob `name` to pending/, on the disk, before its row's transaction; no partial file
   *  on failure. */
  async stageContent(name: string, content: string | Buffer): Promise<Pending> {
    const p = this.pendingEntry(name);
    try {
      await writeFile(p.path, content);
    } catch (err) {
      await rm(p.path, { force: true });
      throw err;
    }
    await this.flushStaged(p);
    return p;
  }

  /** Flushes a blob written to pending/ (by staging, or by a pool thread): its bytes, then its
   *  name; removed when either fails. */
  async flushStaged(p: Pending): Promise<void> {
    try {
      await this.flush.file(p.path);
      await this.flushDir(this.pendingDir);
    } catch (err) {
      await rm(p.path, { force: true });
      throw err;
    }
  }

  /**
   * Flushes blob `name`, written in its place without staging (an upload's part in its region of
   * the upload's file), before its row: its bytes, and the directories from its own up to the
   * store's, which its first writer may have made.
   */
  async flushPlaced(name: string): Promise<void> {
    const file = this.pathOf(name);
    await this.flush.file(file);
    for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
      await this.flushDir(dir);
      if (dir === this.root) break;
    }
  }

  /**
   * Flushes directory `dir`. A caller shares the flush that has not started yet, or starts the
   * next one once the running one ends: that one may have begun before the caller's rename.
   */
  private flushDir(dir: string): Promise<void> {
    let f = this.dirFlushes.get(dir);
    if (!f) this.dirFlushes.set(dir, f = {});
    if (f.next) return f.next;
    const state = f;
    const next = (state.running ?? Promise.resolve()).catch(() => {}).then(() => {
      state.next = undefined;
      const run = this.flush.dir(dir);
      state.running = run;
      const done = (): void => {
        if (state.running !== run) return;
        state.running = undefined;
        if (!state.next) this.dirFlushes.delete(dir);
      };
      run.then(done, done);
      return run;
    });
    state.next = next;
    return next;
  }

  /** Puts staged blobs in their place, once their rows are committed. */
  async place(staged: Pending[]): Promise<void> {
    for (const p of staged) {
      const target = this.pathOf(p.name);
      mkdirSync(path.dirname(target), { recursive: true });
      await rename(p.path, target).catch((err: NodeJS.ErrnoException) => { if (err.code !== 'ENOENT') throw err; });
    }
  }

  /** Moves blobs out of their place to pending/, before their rows are deleted. */
  async unplace(names: string[]): Promise<Pending[]> {
    const out: Pending[] = [];
    for (const name of names) {
      const p = this.pendingEntry(name);
      try {
        await rename(this.pathOf(name), p.path);
        out.push(p);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    return out;
  }

  /** Removes staged blobs whose rows will not exist (refused, or deleted). */
  async discard(staged: Pending[]): Promise<void> {
    await Promise.all(staged.map((p) => rm(p.path, { force: true })));
  }

  /**
   * Settles what waited in pending/ for longer than `graceMs` (its transaction is long over: a
   * crash or a lost answer left it): placed when `exists` says its row is there, else removed.
   * Returns how many entries were placed and removed.
   */
  async resolvePending(graceMs: number, exists: (names: string[]) => Promise<Set<string>>): Promise<{ placed: number; removed: number }> {
    // A grace of 0 means every entry, now: a file made in this very millisecond (its ctime a
    // fraction past Date.now()) must not slip through as "too young".
    const cutoff = graceMs <= 0 ? Infinity : Date.now() - graceMs;
    const stale: Pending[] = [];
    for (const entry of await readdir(this.pendingDir).catch(() => [] as string[])) {
      const cut = entry.lastIndexOf('~');
      const p = path.join(this.pendingDir, entry);
      const st = await stat(p).catch(() => undefined);
      if (cut <= 0 || !st || st.ctimeMs >= cutoff) continue;
      stale.push({ name: decodeURIComponent(entry.slice(0, cut)), path: p });
    }
    if (stale.length === 0) return { placed: 0, removed: 0 };
    const rows = await exists([...new Set(stale.map((p) => p.name))]);
    const keep = stale.filter((p) => rows.has(p.name));
    await this.place(keep);
    await this.discard(stale.filter((p) => !rows.has(p.name)));
    return { placed: keep.length, removed: stale.length - keep.length };
  }

  /** True when blob `name` is in its place. */
  async exists(name: string): Promise<boolean> {
    return stat(this.pathOf(name)).then(() => true, () => false);
  }

  /**
   * For a reader that found the blob's row: true once it is in its place. A committed row's blob
   * can still wait in pending/ for a moment (it is placed right after the commit; a commit whose
   * answer was lost places it after its retry): wait up to `ms` while it does. Says where the
   * blob is at the end: in its place, still pending, or neither.
   */
  async whenPlaced(name: string, ms: number): Promise<'placed' | 'pending' | 'missing'> {
    const until = Date.now() + ms;
    for (;;) {
      if (await this.exists(name)) return 'placed';
      if (!(await this.isPending(name))) return (await this.exists(name)) ? 'placed' : 'missing';
      if (Date.now() >= until) return 'pending';
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** True when blob `name` waits in pending/ (to be placed, or resolved by the sweep). */
  async isPending(name: string): Promise<boolean> {
    const prefix = `${encodeURIComponent(name)}~`;
    return (await readdir(this.pendingDir).catch(() => [] as string[])).some((e) => e.startsWith(prefix));
  }
}

/**
 * Removes a file that may be gone already (a received file its request moved into the store):
 * one unlink, where rm with `force` looks at the path first, each a trip through libuv's threads.
 */
export async function removeFile(file: string): Promise<void> {
  await unlink(file).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

/** A rename, or a copy and remove across file systems (a temp dir elsewhere). */
async function moveFile(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    await copyFile(from, to);
    await rm(from, { force: true });
  }
}
