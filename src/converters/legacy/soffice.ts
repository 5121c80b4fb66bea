// Runs LibreOffice headless to turn one legacy or OpenDocument file into its OOXML twin
// (.doc/.odt/.rtf → .docx, .xls/.ods → .xlsx, .ppt/.odp → .pptx). One soffice per file, started
// from the converter's thread, with:
// - its own user profile in the task's scratch folder (-env:UserInstallation), so runs never
//   share state or wait on another run's lock;
// - no network: in a network namespace of its own (`unshare --net`, with a user namespace when
//   not root); where the kernel refuses one, LibreOffice types answer 503 unless the operator
//   says the host gives the process no network anyway (SOFFICE_NETWORK=host);
// - a wall-clock limit (SOFFICE_TIMEOUT_S), and the whole process group killed on that limit, on
//   the task's AbortSignal, or by the pool when it terminates the thread (ctx.watchChild); a
//   `timeout` wrapper kills the group in any case a little after the limit, should all else fail.
// Where soffice is missing (SOFFICE_PATH, else `soffice` on PATH), or is there without the
// application a type needs (Calc for spreadsheets, Impress for decks), these types answer 503
// parser_unavailable, retryable: false, with a hint naming the package to install.
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, realpathSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ApiError } from '../../errors.js';
import { FORMATS, type LegacyFormat, type OfficeKind } from './formats.js';

/** Debian's packages for each kind (the -nogui builds: no X libraries). */
export const PACKAGES: Record<OfficeKind, string> = {
  word: 'libreoffice-writer-nogui',
  excel: 'libreoffice-calc-nogui',
  powerpoint: 'libreoffice-impress-nogui',
};

/** The library of each kind's LibreOffice application in its program folder (Writer, Calc,
 *  Impress), which Debian ships in the package above: soffice alone runs with Writer only, and
 *  then cannot load a spreadsheet or a deck ("source file could not be loaded"). */
const APPLICATION: Record<OfficeKind, { name: string; library: string }> = {
  word: { name: 'Writer', library: 'libswlo.so' },
  excel: { name: 'Calc', library: 'libsclo.so' },
  powerpoint: { name: 'Impress', library: 'libsdlo.so' },
};

/**
 * Whether the LibreOffice of `soffice` has the application for `kind`. Only where its program
 * folder holds one of the applications' libraries (Debian's layout, and LibreOffice's own Linux
 * builds) is a missing one taken as missing; a layout where none is found (a wrapper script at
 * SOFFICE_PATH, another system) is trusted to have them all.
 */
function hasApplication(soffice: string, kind: OfficeKind): boolean {
  // A success is remembered (no file system call per request after it); a refusal is looked
  // at again next time, so an application installed meanwhile is found.
  const key = `${kind}\0${soffice}`;
  if (applicationsFound.has(key)) return true;
  const found = lookForApplication(soffice, kind);
  if (found) applicationsFound.add(key);
  return found;
}

const applicationsFound = new Set<string>();

function lookForApplication(soffice: string, kind: OfficeKind): boolean {
  let program: string;
  try {
    program = path.dirname(realpathSync(soffice));
  } catch {
    return true;
  }
  const present = (k: OfficeKind) => existsSync(path.join(program, APPLICATION[k].library));
  const known = (Object.keys(APPLICATION) as OfficeKind[]).some(present);
  return !known || present(kind);
}

const EXPORT_FILTER = { docx: 'MS Word 2007 XML', xlsx: 'Calc MS Excel 2007 XML', pptx: 'Impress MS PowerPoint 2007 XML' } as const;

const DEFAULT_TIMEOUT_S = 60;
/** How long after the limit the `timeout` wrapper kills the group itself. */
const BACKSTOP_S = 10;
const KEEP_OUTPUT = 2048;

export interface EngineSettings {
  /** SOFFICE_PATH: the soffice to run; unset: `soffice` on PATH, then LibreOffice's usual places. */
  path?: string;
  /** SOFFICE_TIMEOUT_S: the wall-clock limit of one run. */
  timeoutMs: number;
  /** SOFFICE_NETWORK: `isolated` (default) or `host` (run without a network namespace). */
  network: 'isolated' | 'host';
}

export function engineSettings(env: NodeJS.ProcessEnv = process.env): EngineSettings {
  const s = Number(env.SOFFICE_TIMEOUT_S);
  return {
    path: env.SOFFICE_PATH || undefined,
    timeoutMs: (Number.isFinite(s) && s > 0 ? s : DEFAULT_TIMEOUT_S) * 1000,
    network: env.SOFFICE_NETWORK === 'host' ? 'host' : 'isolated',
  };
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The soffice that would run, or null. */
export function findSoffice(settings: EngineSettings = engineSettings()): string | null {
  if (settings.path) return executable(settings.path) ? settings.path : null;
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  const candidates = [...dirs.map((d) => path.join(d, 'soffice')), '/usr/lib/libreoffice/program/soffice', '/opt/libreoffice/program/soffice'];
  return candidates.find(executable) ?? null;
}

function unavailable(kind: OfficeKind, why: string): ApiError {
  const what = Object.values(FORMATS).filter((f) => f.kind === kind).map((f) => f.extensions[0]).join(', ');
  return new ApiError('parser_unavailable', `${what} files are converted with LibreOffice, which ${why}.`, {}, {
    retryable: false,
    hint: `Install LibreOffice on the server (Debian: apt-get install ${PACKAGES[kind]}) or point SOFFICE_PATH at its soffice; then send the file again.`,
  });
}

let isolation: Promise<string[] | null> | undefined;

/** The command that puts soffice in a network namespace of its own, or null where none can be
 *  made. A success is remembered for the process (or thread); a refusal is asked again next time. */
function isolationPrefix(): Promise<string[] | null> {
  isolation ??= (async () => {
    const rootless = typeof process.getuid === 'function' && process.getuid() !== 0;
    const prefix = rootless ? ['unshare', '--user', '--map-root-user', '--net', '--'] : ['unshare', '--net', '--'];
    const ok = await new Promise<boolean>((resolve) => {
      const p = spawn(prefix[0]!, [...prefix.slice(1), 'true'], { stdio: 'ignore' });
      p.on('error', () => resolve(false));
      p.on('exit', (code) => resolve(code === 0));
    });
    if (!ok) isolation = undefined;
    return ok ? prefix : null;
  })();
  return isolation;
}

/** What runs soffice for this kind, or a 503 saying what is missing: at pricing and at conversion. */
export async function requireEngine(kind: OfficeKind, settings: EngineSettings = engineSettings()): Promise<{ soffice: string; prefix: string[] }> {
  const soffice = findSoffice(settings);
  if (!soffice) return Promise.reject(unavailable(kind, settings.path ? `is not at SOFFICE_PATH (${settings.path})` : 'is not installed'));
  if (!hasApplication(soffice, kind)) return Promise.reject(unavailable(kind, `is installed here without ${APPLICATION[kind].name}`));
  if (settings.network === 'host') return { soffice, prefix: [] };
  const prefix = await isolationPrefix();
  if (!prefix) {
    return Promise.reject(unavailable(kind, 'cannot be cut off from the network here (unshare --net is refused); set SOFFICE_NETWORK=host where the server has no network anyway'));
  }
  return { soffice, prefix };
}

export interface RunOptions {
  signal: AbortSignal;
  /** The task's scratch folder: the run's profile, input link and output live under it. */
  tmpDir: string;
  watchChild?: (pid: number) => () => void;
  settings?: EngineSettings;
}

/** Converts `input` (of `format`, as its bytes said) to its OOXML twin; returns the twin's path. */
export async function toTwin(input: string, format: LegacyFormat, opts: RunOptions): Promise<string> {
  const settings = opts.settings ?? engineSettings();
  const spec = FORMATS[format];
  const { soffice, prefix } = await requireEngine(spec.kind, settings);
  opts.signal.throwIfAborted();
  const work = await mkdtemp(path.join(opts.tmpDir, 'soffice-'));
  const outDir = path.join(work, 'out');
  await mkdir(outDir);
  // LibreOffice reads the name's extension as a first guess of the type: give it the one the bytes said.
  const source = path.join(work, `source${spec.extensions[0]}`);
  await symlink(path.resolve(input), source);
  const limitS = Math.ceil(settings.timeoutMs / 1000);
  const backstop = executable('/usr/bin/timeout') ? ['/usr/bin/timeout', '--signal=KILL', `${limitS + BACKSTOP_S}s`] : [];
  const argv = [
    ...backstop, ...prefix, soffice,
    `-env:UserInstallation=${pathToFileURL(path.join(work, 'profile')).href}`,
    '--headless', '--invisible', '--nodefault', '--nolockcheck', '--nologo', '--norestore',
    '--convert-to', `${spec.twin}:${EXPORT_FILTER[spec.twin]}`, '--outdir', outDir, source,
  ];
  const outcome = await run(argv, work, settings.timeoutMs, opts);
  if (outcome.aborted) throw new ApiError('invalid_document', 'The conversion was cancelled.');
  if (outcome.timedOut) {
    throw new ApiError('invalid_document', `LibreOffice did not finish converting ${spec.label} within ${+(settings.timeoutMs / 1000).toFixed(3)} s`);
  }
  const twin = path.join(outDir, `source.${spec.twin}`);
  const made = await stat(twin).then((s) => s.isFile() && s.size > 0, () => false);
  if (!made) {
    const said = outcome.output.split('\n').map((l) => l.trim()).filter((l) => l && !/javaldx|^convert /.test(l)).pop();
    throw new ApiError('invalid_document', `LibreOffice could not read ${spec.label}${said ? `: ${said}` : ''}`);
  }
  return twin;
}

interface Outcome { timedOut: boolean; aborted: boolean; output: string }

function run(argv: string[], cwd: string, timeoutMs: number, opts: RunOptions): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd,
      // Its own process group (setsid), so the whole tree goes down with one kill.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: cwd, TMPDIR: cwd, LANG: 'C.UTF-8', SAL_USE_VCLPLUGIN: 'svp' },
    });
    let output = '';
    const keep = (b: Buffer): void => { output = (output + b.toString('utf8')).slice(-KEEP_OUTPUT); };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    let aborted = false;
    const killGroup = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const unwatch = child.pid !== undefined ? opts.watchChild?.(child.pid) : undefined;
    const timer = setTimeout(() => { timedOut = true; killGroup(); }, timeoutMs);
    const onAbort = (): void => { aborted = true; killGroup(); };
    opts.signal.addEventListener('abort', onAbort, { once: true });
    const done = (): void => {
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
    };
    child.on('error', (err) => {
      done();
      unwatch?.();
      reject(new ApiError('parser_unavailable', `LibreOffice could not be started: ${err.message}`));
    });
    child.on('exit', () => {
      done();
      // Whatever the run left behind in its group goes with it; that also closes its pipes.
      killGroup();
      unwatch?.();
      // The last output arrives with 'close'; a pipe held open past the group is not waited for.
      const late = setTimeout(() => { child.stdout.destroy(); child.stderr.destroy(); }, 2000);
      child.once('close', () => { clearTimeout(late); resolve({ timedOut, aborted, output }); });
    });
  });
}
