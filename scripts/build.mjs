// Compiles the server (src/) to JavaScript: `npm run build`, run by `npm start` before it starts
// (prestart), by the image's build stage and by the bench. `node scripts/build.mjs [out dir]`,
// dist/ by default; the output mirrors the sources (dist/src/main.js is src/main.ts), with the
// files that are not TypeScript (SQL migrations, Lua scripts) copied beside the code that reads
// them, and nothing else: a file whose source is gone is removed from the output.
//
// Why the server does not run its sources through tsx, as the CLI and the tests do: tsx compiles
// with esbuild's keepNames, which wraps every function and class in a call that redefines its
// `name` each time it is created, closures made per request included. Scenario A on 2 cores
// (bench:cpu, two alternating pairs): 372.7 / 442.0 µs of CPU a request from the build against
// 468.3 / 485.7 through tsx; 4,608 against 3,585 req/s under wrk.
//
// The compiler is incremental (its state in <out>/.tsbuildinfo): a start with nothing changed
// costs about 3 s here, a first build about 11 s.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const out = path.resolve(process.argv[2] ?? path.join(root, 'dist'));
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  // `npm ci --omit=dev` leaves the compiler out: the image builds dist/ in a stage that has it.
  console.error('build: the TypeScript compiler is not installed (a development dependency: run `npm ci`)');
  process.exit(1);
}

const buildInfo = path.join(out, '.tsbuildinfo');

/** Files under `dir`, relative to it. */
const filesIn = (dir) => (existsSync(dir) ? readdirSync(dir, { recursive: true, withFileTypes: true }) : [])
  .filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath ?? e.path, e.name)));

function compile() {
  const run = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json'),
    '--outDir', out, '--tsBuildInfoFile', buildInfo], { stdio: 'inherit' });
  if (run.status !== 0) {
    console.error(`build: the compiler failed (${run.status ?? run.signal}); nothing to start`);
    process.exit(1);
  }
}

const sources = new Set(filesIn(path.join(root, 'src')));
compile();
// The compiler's state says what it emitted, not what is still there: output removed since
// (dist/src deleted by hand) would not be written again. Then it compiles from scratch.
const missing = (file) => file.endsWith('.ts') && !existsSync(path.join(out, 'src', file.replace(/\.ts$/, '.js')));
if ([...sources].some(missing)) {
  rmSync(buildInfo, { force: true });
  compile();
}
const kept = new Set();
for (const file of sources) {
  if (file.endsWith('.ts')) {
    kept.add(file.replace(/\.ts$/, '.js')).add(file.replace(/\.ts$/, '.js.map'));
    continue;
  }
  const to = path.join(out, 'src', file);
  mkdirSync(path.dirname(to), { recursive: true });
  copyFileSync(path.join(root, 'src', file), to);
  kept.add(file);
}
for (const file of filesIn(path.join(out, 'src'))) {
  if (!kept.has(file)) rmSync(path.join(out, 'src', file));
}
