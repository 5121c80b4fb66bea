// Document bytes on disk under DATA_DIR: tmp/ for request bodies being received, blobs/ for
// sources and large outputs. A blob's name is relative to blobs/, so DATA_DIR can move.
import { mkdirSync } from 'node:fs';
import { rename, rm, writeFile, copyFile } from 'node:fs/promises';
import path from 'node:path';

export class Blobs {
  readonly tmpDir: string;
  readonly root: string;
  /** Account directories made already: the hot path makes each once, not per file. */
  private made = new Set<string>();

  constructor(dataDir: string) {
    this.tmpDir = path.resolve(dataDir, 'tmp');
    this.root = path.resolve(dataDir, 'blobs');
    mkdirSync(this.tmpDir, { recursive: true });
    mkdirSync(this.root, { recursive: true });
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
    await this.inDir(target, async () => {
      try {
        await rename(tmpPath, target);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
        await copyFile(tmpPath, target);
        await rm(tmpPath, { force: true });
      }
    });
    return target;
  }

  async write(name: string, content: string | Buffer): Promise<string> {
    const target = this.pathOf(name);
    await this.inDir(target, () => writeFile(target, content));
    return target;
  }

  /** Runs `op` on `file` with its directory made; a directory removed since (an upload's parts
   *  directory after completion) is made again once. */
  private async inDir(file: string, op: () => Promise<void>): Promise<void> {
    const dir = path.dirname(file);
    if (!this.made.has(dir)) this.makeDir(dir);
    try {
      await op();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      this.makeDir(dir);
      await op();
    }
  }

  private makeDir(dir: string): void {
    mkdirSync(dir, { recursive: true });
    // Only the accounts' own directories are remembered: one per account, never removed.
    if (path.dirname(dir) === this.root) this.made.add(dir);
  }

  async remove(names: string[]): Promise<void> {
    await Promise.all(names.map((n) => rm(this.pathOf(n), { force: true })));
  }
}
