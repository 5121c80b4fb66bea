// Speed beside quality: the PDF converter's pages per second in this thread at `fast` and at
// `standard`, against native `mutool draw -F txt` run one process at a time on the same files
// (both per core), on the texlive manuals scenario B converts. Layout analysis (tables,
// headings, reading order) must not push `standard` under 0.3× mutool. The three are timed
// file by file in turn, round after round, so a change in the machine's load while it runs
// falls on all three alike. `tsx bench/quality/speed.ts` runs it alone.
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { pdfConverter } from '../../src/converters/pdf.js';
import { convertWith } from '../../test/helpers/convert-ctx.js';
import { texlivePdfs, type CorpusFile } from '../corpus.js';
import type { QualityRow } from './types.js';

/** Rounds go on until this much time has passed (about a third of it per contender). */
const MIN_SECONDS = 24;

type Run = (f: CorpusFile) => Promise<void>;

/** Pages per second of each contender, timed in turn on every file, in whole rounds. */
async function rates(files: readonly CorpusFile[], runs: readonly Run[]): Promise<number[]> {
  const ms = runs.map(() => 0);
  let pages = 0;
  const t0 = performance.now();
  do {
    for (const f of files) {
      for (const [k, run] of runs.entries()) {
        const t = performance.now();
        await run(f);
        ms[k]! += performance.now() - t;
      }
      pages += f.pages;
    }
  } while (performance.now() - t0 < MIN_SECONDS * 1000);
  return ms.map((m) => pages / (m / 1000));
}

export async function run(): Promise<QualityRow[]> {
  let files: CorpusFile[] = [];
  try { files = texlivePdfs(6); } catch { /* not installed */ }
  if (files.length === 0 || spawnSync('mutool', ['-v']).error) {
    return [{ name: 'PDF speed vs mutool', measured: 'skipped: needs texlive-latex-base-doc and mupdf-tools (npm run bench installs them)', target: '-', pass: false }];
  }
  const [mutool, fast, standard] = await rates(files, [
    async (f) => { spawnSync('mutool', ['draw', '-q', '-F', 'txt', '-o', '/dev/null', f.path]); },
    async (f) => { await convertWith(pdfConverter, f.path, { quality: 'fast' }); },
    async (f) => { await convertWith(pdfConverter, f.path, { quality: 'standard' }); },
  ]) as [number, number, number];
  const pages = files.reduce((n, f) => n + f.pages, 0);
  const note = `${files.length} manuals, ${pages} pages; mutool ${mutool.toFixed(0)} pages/s`;
  return [
    { name: 'PDF fast, in thread', measured: `${fast.toFixed(0)} pages/s = ${(fast / mutool).toFixed(2)}× mutool (${note})`, target: 'reported', pass: true },
    { name: 'PDF standard, in thread', measured: `${standard.toFixed(0)} pages/s = ${(standard / mutool).toFixed(2)}× mutool`, target: '≥ 0.3× mutool', pass: standard / mutool >= 0.3 },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const r of await run()) console.log(`${r.pass ? 'PASS' : 'FAIL'}  ${r.name}: ${r.measured} (target ${r.target})`);
  process.exit(0);
}
