// Document bytes on disk under DATA_DIR: tmp/ for request bodies being received, blobs/ for
// sources and large outputs. A blob's name is relative to blobs/, so DATA_DIR can move.
import { mkdirSync } from 'node:fs';
import { rename, rm, writeFile, copyFile } from 'node:fs/promises';
import path from 'node:path';

export class Blobs {
  readonly tmpDir: string;
  readonly root: string;

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
    mkdirSync(path.dirname(target), { recursive: true });
    try {
      await rename(tmpPath, target);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
      await copyFile(tmpPath, target);
      await rm(tmpPath, { force: true });
    }
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
}
