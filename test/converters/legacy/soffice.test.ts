// The LibreOffice runner, with stand-in engines (shell scripts at SOFFICE_PATH's place) so that
// no real soffice starts: a run past its limit and a cancelled run are killed with their whole
// process group (a grandchild included), the executor hears of the group and of its end, the
// engine runs in a network namespace with nothing but loopback, and a missing engine is a 503
// that is not retryable and names the package to install; so is a LibreOffice without the
// application a type needs (Writer only: spreadsheets and decks), told by its program folder.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ApiError, problemOf } from '../../../src/errors.js';
import { engineSettings, requireEngine, toTwin, type EngineSettings } from '../../../src/converters/legacy/soffice.js';
import { LEGACY_DIR } from '../../fixtures/build/legacy.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-soffice-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** A stand-in soffice: records its grandchild's pid and its network interfaces, then hangs. */
function hangingEngine(name: string): { path: string; pidFile: string; netFile: string } {
  const file = path.join(dir, name);
  const pidFile = `${file}.pid`;
  const netFile = `${file}.net`;
  writeFileSync(file, `#!/bin/sh\ncat /proc/self/net/dev > '${netFile}'\nsleep 300 &\necho $! > '${pidFile}'\nwait\n`);
  chmodSync(file, 0o755);
  return { path: file, pidFile, netFile };
}

/** Waits for `cond`; the deadline is one only a hang reaches. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (const end = Date.now() + 60_000; !cond();) {
    if (Date.now() > end) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Alive: listed in /proc and not a zombie. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const settings = (enginePath: string, timeoutMs = 600_000): EngineSettings => ({ path: enginePath, timeoutMs, network: 'isolated' });
const input = path.join(LEGACY_DIR, 'letter.doc');

t.test('a run past its limit is killed with its whole process group', async (t) => {
  const engine = hangingEngine('slow-soffice');
  const watched: string[] = [];
  const err = await toTwin(input, 'doc', {
    signal: new AbortController().signal, tmpDir: dir, settings: settings(engine.path, 1500),
    watchChild: (pid) => { watched.push(`started ${pid}`); return () => watched.push(`ended ${pid}`); },
  }).catch((e: unknown) => e);
  t.ok(err instanceof ApiError && err.code === 'invalid_document', 'the file fails as invalid_document');
  t.match((err as Error).message, /did not finish converting a Word 97–2003 document \(\.doc\) within 1\.5 s/);
  t.equal(watched.length, 2, 'the executor heard of the group and of its end');
  t.match(watched[0], /^started \d+$/);
  t.equal(watched[1], watched[0]!.replace('started', 'ended'), 'the same group, in that order');
  const grandchild = Number(readFileSync(engine.pidFile, 'utf8'));
  await until(() => !alive(grandchild), 'the grandchild is gone');
  t.notOk(alive(grandchild), 'the sleeping grandchild went down with the group');
});

t.test('a cancelled run is killed with its whole process group', async (t) => {
  const engine = hangingEngine('cancelled-soffice');
  const ac = new AbortController();
  const run = toTwin(input, 'doc', { signal: ac.signal, tmpDir: dir, settings: settings(engine.path) }).catch((e: unknown) => e);
  await until(() => existsSync(engine.pidFile) && readFileSync(engine.pidFile, 'utf8').trim() !== '', 'the engine started');
  const grandchild = Number(readFileSync(engine.pidFile, 'utf8'));
  ac.abort();
  const err = await run;
  t.ok(err instanceof ApiError && err.code === 'invalid_document');
  t.match((err as Error).message, /cancelled/);
  await until(() => !alive(grandchild), 'the grandchild is gone');
  t.notOk(alive(grandchild));
});

t.test('the engine runs in a network namespace of its own, with loopback only', async (t) => {
  const engine = hangingEngine('offline-soffice');
  await toTwin(input, 'doc', { signal: new AbortController().signal, tmpDir: dir, settings: settings(engine.path, 1500) }).catch(() => {});
  const interfaces = readFileSync(engine.netFile, 'utf8').split('\n').slice(2).map((l) => l.split(':')[0]!.trim()).filter(Boolean);
  t.same(interfaces, ['lo'], 'no interface but loopback');
});

t.test('a missing engine is 503 parser_unavailable, not retryable, with the package to install', async (t) => {
  for (const [kind, pkg] of [['word', 'libreoffice-writer-nogui'], ['excel', 'libreoffice-calc-nogui'], ['powerpoint', 'libreoffice-impress-nogui']] as const) {
    const err = await requireEngine(kind, settings('/nonexistent/soffice')).catch((e: unknown) => e) as ApiError;
    t.equal(err.code, 'parser_unavailable', kind);
    t.match(err.message, /SOFFICE_PATH \(\/nonexistent\/soffice\)/);
    const problem = problemOf(err.code, err.message, '/v1/convert/x', 'req', err.overrides);
    t.equal(problem.status, 503);
    t.equal(problem.retryable, false, 'retrying cannot install it');
    t.match(problem.hint, new RegExp(`apt-get install ${pkg}`), `${kind}: the hint names ${pkg}`);
  }
});

t.test('a LibreOffice without Calc or Impress is 503 for spreadsheets and decks, with their package', async (t) => {
  // A program folder as Debian lays one out, with Writer's library only.
  const program = path.join(dir, 'writer-only', 'program');
  mkdirSync(program, { recursive: true });
  const engine = path.join(program, 'soffice');
  writeFileSync(engine, '#!/bin/sh\nexit 0\n');
  chmodSync(engine, 0o755);
  writeFileSync(path.join(program, 'libswlo.so'), '');
  const linked = path.join(dir, 'writer-only', 'soffice-on-path');
  symlinkSync(engine, linked);
  for (const [kind, app, pkg] of [['excel', 'Calc', 'libreoffice-calc-nogui'], ['powerpoint', 'Impress', 'libreoffice-impress-nogui']] as const) {
    const err = await requireEngine(kind, settings(linked)).catch((e: unknown) => e) as ApiError;
    t.equal(err.code, 'parser_unavailable', `${kind}: refused before anything runs`);
    t.match(err.message, new RegExp(`without ${app}`), `${kind}: the message says ${app} is missing`);
    const problem = problemOf(err.code, err.message, '/v1/convert/x', 'req', err.overrides);
    t.equal(problem.status, 503);
    t.match(problem.hint, new RegExp(`apt-get install ${pkg}`), `${kind}: the hint names ${pkg}`);
  }
  const word = await requireEngine('word', { ...settings(linked), network: 'host' });
  t.equal(word.soffice, linked, 'Writer\'s own files still run');
  // With Calc's library there too, spreadsheets run; a folder with none of the libraries (a
  // wrapper script elsewhere) is trusted to have them all.
  writeFileSync(path.join(program, 'libsclo.so'), '');
  t.equal((await requireEngine('excel', { ...settings(linked), network: 'host' })).soffice, linked, 'with Calc, spreadsheets run');
  const wrapper = hangingEngine('wrapper-soffice');
  t.equal((await requireEngine('powerpoint', { ...settings(wrapper.path), network: 'host' })).soffice, wrapper.path,
    'an engine whose folder names no application is not refused');
});

t.test('the settings come from SOFFICE_PATH, SOFFICE_TIMEOUT_S and SOFFICE_NETWORK', async (t) => {
  t.same(engineSettings({}), { path: undefined, timeoutMs: 60_000, network: 'isolated' });
  t.same(engineSettings({ SOFFICE_PATH: '/opt/lo/soffice', SOFFICE_TIMEOUT_S: '5', SOFFICE_NETWORK: 'host' }), { path: '/opt/lo/soffice', timeoutMs: 5000, network: 'host' });
});
