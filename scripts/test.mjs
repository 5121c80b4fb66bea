// The project's one test command (README, .ci/run): runs the tap suite, passes its output
// through, and ends with one plain totals line "N passed, N failed" that CI reads.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const tap = path.join(root, 'node_modules', '.bin', 'tap');
// tap builds its set of plugins (package.json's tap.plugin) into node_modules once per install.
// Left to the run, the first run after `npm ci` (CI's only run) was the slow one: 435 s and
// 11.7 min of CPU where the same clone's next run took 291 s and 7.0 min; five of the slowest
// files took 75 s right after `npm ci`, 46 s when `tap build` (about 4 s) ran first, 45 s on
// the next run. So the suite builds first.
const build = spawnSync(tap, ['build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
if (build.status !== 0) {
  console.log('tap build failed');
  console.log('0 passed, 1 failed');
  process.exit(1);
}
// One migrated embedded store per run, copied by every test that needs a new one
// (test/helpers/embedded-template.ts); removed when the run ends.
const templates = mkdtempSync(path.join(os.tmpdir(), 'docpipe-test-templates-'));
const child = spawn(tap, ['--reporter=tap', ...process.argv.slice(2)], {
  cwd: root,
  env: { ...process.env, DOCPIPE_TEST_TEMPLATES: templates },
  stdio: ['ignore', 'pipe', 'inherit'],
});

let last = '';
let summary = null;
/** Per-file wall times from tap's "ok N - test/x.test.ts # time=123ms" lines. */
const fileTimes = [];
// What failed, named by its file and subtests, repeated just before the totals: CI keeps only the
// tail of the output, and a failure hundreds of lines up was invisible there.
/** The names of the subtests open at each indentation (4 spaces a level). */
const open = [];
const failures = [];
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  const text = last + chunk.toString('utf8');
  const lines = text.split('\n');
  last = lines.pop() ?? '';
  for (const line of lines) {
    const m = /^# \{ total: (\d+)(.*)\}$/.exec(line.trim());
    if (m) summary = { total: Number(m[1]), rest: m[2] };
    const f = /^(?:not )?ok \d+ - (\S+\.test\.ts) # time=([\d.]+)ms/.exec(line.trim());
    if (f) fileTimes.push({ file: f[1], ms: Number(f[2]) });
    const depth = (line.length - line.trimStart().length) >> 2;
    const subtest = /^# Subtest: (.*)$/.exec(line.trim());
    if (subtest) {
      open.length = depth;
      open[depth] = subtest[1];
    }
    const notOk = /^not ok \d+ - (.*?)(?: # time=[\d.]+ms)?$/.exec(line.trim());
    // A failed subtest is reported with the assertions inside it: only the innermost are kept.
    if (notOk && !/ # (?:TODO|SKIP)/i.test(notOk[1])) {
      const name = [...open.slice(0, depth), notOk[1]].join(' > ');
      if (!failures.some((inner) => inner.startsWith(`${name} > `))) failures.push(name);
    }
  }
});

child.on('close', (code) => {
  rmSync(templates, { recursive: true, force: true });
  let passed = 0;
  let failed = 0;
  if (summary) {
    const pass = /pass: (\d+)/.exec(summary.rest);
    const fail = /fail: (\d+)/.exec(summary.rest);
    passed = pass ? Number(pass[1]) : 0;
    failed = fail ? Number(fail[1]) : 0;
  } else {
    failed = 1; // no summary: the runner itself broke
  }
  if (failures.length) {
    console.log('# failed:');
    for (const name of failures.slice(0, 30)) console.log(`#   ${name}`);
    if (failures.length > 30) console.log(`#   … and ${failures.length - 30} more`);
  }
  const slowest = fileTimes.sort((a, b) => b.ms - a.ms).slice(0, 10);
  if (slowest.length) {
    console.log('# slowest files:');
    for (const { file, ms } of slowest) console.log(`#   ${(ms / 1000).toFixed(1).padStart(6)} s  ${file}`);
  }
  // The totals line stays the last line: CI reads it.
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(code === 0 && summary && failed === 0 ? 0 : 1);
});
