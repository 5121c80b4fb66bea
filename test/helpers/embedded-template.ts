// A fresh embedded store costs seconds: PGlite's first start on an empty directory runs initdb,
// then every migration applies. Tests that need an embedded store (a world, the admin CLI on a
// new DATA_DIR) start instead from a copy of one store made and migrated once per test run: the
// copy opens in a fraction of that, and the server's own start-up still runs migrate() on it
// (finding nothing left to apply), as it does on any existing store.
//
// The template lives in DOCPIPE_TEST_TEMPLATES (scripts/test.mjs makes a directory per run and
// removes it at the end) or, for a test file run on its own, under the system temp directory;
// its name holds a hash of the migrations and the PGlite version, so a changed migration never
// meets an old template. The first test file that needs it builds it (others wait for it) and
// renames it into place when it is whole.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDb } from '../../src/store/db.js';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../src/store/migrations');

function templateName(): string {
  const hash = createHash('sha256');
  hash.update(pgliteVersion());
  for (const f of readdirSync(MIGRATIONS_DIR).sort()) hash.update(f).update(readFileSync(path.join(MIGRATIONS_DIR, f)));
  return `pg-${hash.digest('hex').slice(0, 16)}`;
}

/** The installed PGlite's version (its package.json is not among the package's exports). */
function pgliteVersion(): string {
  let dir = path.dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
  while (!existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  return JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).version as string;
}

/** Longer than any build of the template takes: a bound only a build that died reaches. */
const BUILD_BOUND_MS = 120_000;

let ready: Promise<string> | undefined;

/** The migrated template's `pg` directory, built on first use. */
function template(): Promise<string> {
  ready ??= (async () => {
    const root = process.env.DOCPIPE_TEST_TEMPLATES || path.join(os.tmpdir(), 'docpipe-test-templates');
    mkdirSync(root, { recursive: true });
    const final = path.join(root, templateName());
    if (existsSync(final)) return final;
    // One test file builds it while the others wait (building it beside each other would cost
    // each of them what the copy saves). A bound only a builder that died reaches: then this
    // file builds a copy of its own.
    const lock = `${final}.building`;
    // A lock left by a build that died (a file killed at tap's timeout) in the shared fallback
    // directory would make every later file wait: one older than any build is taken over.
    try {
      if (Date.now() - statSync(lock).mtimeMs > BUILD_BOUND_MS) rmSync(lock, { recursive: true, force: true });
    } catch { /* no lock */ }
    let mine = false;
    try {
      mkdirSync(lock);
      mine = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      for (const end = Date.now() + BUILD_BOUND_MS; !existsSync(final) && Date.now() < end;) await new Promise((r) => setTimeout(r, 100));
      if (existsSync(final)) return final;
    }
    const scratch = mkdtempSync(path.join(root, 'building-'));
    try {
      const db = await openDb({ dataDir: scratch });
      await db.close();
      try {
        renameSync(path.join(scratch, 'pg'), final);
      } catch (err) {
        // Another test file renamed its copy first: use that one.
        if (!existsSync(final)) throw err;
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
      if (mine) rmSync(lock, { recursive: true, force: true });
    }
    return final;
  })();
  return ready;
}

/** Puts a migrated, empty embedded store into dataDir (which must not hold one yet). */
export async function seedEmbedded(dataDir: string): Promise<void> {
  const target = path.join(dataDir, 'pg');
  if (existsSync(target)) throw new Error(`${target} already holds a store`);
  cpSync(await template(), target, { recursive: true });
}
