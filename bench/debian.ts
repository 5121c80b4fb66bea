// The Debian tools the baselines run (mutool, pandoc, tesseract) and the PDF manuals of the
// corpus (texlive-latex-base-doc). `ensureDebian` installs the missing packages: one
// `apt-get update`, then `apt-get install -y` (the bench runs as root). With install off (the
// smoke test, --no-install) it only reports what is there, and scenarios skip what is missing.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Package → the command it must provide ('' for a data-only package). */
export const DEBIAN_PACKAGES: Record<string, string> = {
  'mupdf-tools': 'mutool',
  'pandoc': 'pandoc',
  'tesseract-ocr': 'tesseract',
  'texlive-latex-base-doc': '',
  // the quality bench: right-to-left documents made by LibreOffice in Noto fonts, pdftotext
  // beside them, and outline-free copies of the manuals made by qpdf
  'libreoffice-writer-nogui': 'soffice',
  'fonts-noto-core': '',
  'poppler-utils': 'pdftotext',
  'qpdf': 'qpdf',
  // scenario A's load generator
  'wrk': 'wrk',
};

export interface Tools {
  mutool: boolean;
  pandoc: boolean;
  tesseract: boolean;
  wrk: boolean;
  /** The texlive manuals are installed (/usr/share/doc/texlive-doc). */
  texdocs: boolean;
  /** What was installed by this run, for the report. */
  installed: string[];
}

async function installed(pkg: string): Promise<boolean> {
  try {
    const { stdout } = await run('dpkg-query', ['-W', '-f=${Status}', pkg]);
    return stdout.includes('install ok installed');
  } catch {
    return false;
  }
}

async function hasCommand(cmd: string): Promise<boolean> {
  try {
    await run('sh', ['-c', `command -v ${cmd}`]);
    return true;
  } catch {
    return false;
  }
}

export async function ensureDebian(opts: { install: boolean; log: (line: string) => void }): Promise<Tools> {
  const missing: string[] = [];
  for (const [pkg, cmd] of Object.entries(DEBIAN_PACKAGES)) {
    const present = cmd ? await hasCommand(cmd) : await installed(pkg);
    if (!present) missing.push(pkg);
  }
  const done: string[] = [];
  if (missing.length > 0 && opts.install) {
    opts.log(`installing from Debian: ${missing.join(', ')} (apt-get update, then apt-get install -y)`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    try {
      await run('apt-get', ['update', '-qq'], { env, maxBuffer: 64 * 1024 * 1024 });
      await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { env, maxBuffer: 64 * 1024 * 1024 });
      done.push(...missing);
    } catch (err) {
      // not root, or no package mirror: the scenarios skip what is missing and say so
      opts.log(`apt-get failed, going on without ${missing.join(', ')}: ${(err as Error).message.split('\n')[0]}`);
    }
  } else if (missing.length > 0) {
    opts.log(`not installing (install off); missing: ${missing.join(', ')}`);
  }
  return {
    mutool: await hasCommand('mutool'),
    pandoc: await hasCommand('pandoc'),
    tesseract: await hasCommand('tesseract'),
    wrk: await hasCommand('wrk'),
    texdocs: await installed('texlive-latex-base-doc'),
    installed: done,
  };
}
