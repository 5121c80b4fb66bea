// Tables of the quality bench: the PDF converter, called in this thread, on the European half
// of the ICDAR 2013 table competition (../shared/corpus/icdar2013-eu, read in place), scored by
// the corpus's own score-tables.mjs (cell adjacency relations, complete process) at each quality
// and table mode. The Markdown of each run is kept under bench/results/quality/<variant>/.
// `tsx bench/quality/tables.ts` runs it alone.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { pathToFileURL } from 'node:url';
import { pdfConverter } from '../../src/converters/pdf.js';
import { terminateOcr } from '../../src/converters/shared/ocr.js';
import type { ConvertOptions } from '../../src/converters/types.js';
import { convertWith } from '../../test/helpers/convert-ctx.js';
import { ROOT } from '../docpipe.js';
import type { QualityRow } from './types.js';

const exec = promisify(execFile);
export const CORPUS = path.resolve(ROOT, '../shared/corpus');
const ICDAR = path.join(CORPUS, 'icdar2013-eu');

const VARIANTS: Array<{ label: string; options: Partial<ConvertOptions> }> = [
  { label: 'standard', options: {} },
  { label: 'standard-accurate', options: { table_mode: 'accurate' } },
  { label: 'max', options: { quality: 'max' } },
];

interface Score { f1: number; p: number; r: number; found: number; expected: number; seconds: number }

async function score(label: string, options: Partial<ConvertOptions>): Promise<Score> {
  const out = path.join(ROOT, 'bench/results/quality', label);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const t0 = performance.now();
  for (const f of readdirSync(ICDAR).filter((n) => n.endsWith('.pdf')).sort()) {
    const res = await convertWith(pdfConverter, path.join(ICDAR, f), options);
    writeFileSync(path.join(out, f.replace(/\.pdf$/, '.md')), res.markdown);
  }
  const seconds = (performance.now() - t0) / 1000;
  const { stdout } = await exec(process.execPath, [path.join(CORPUS, 'score-tables.mjs'), out]);
  const m = /F1 ([\d.]+) \(P ([\d.]+), R ([\d.]+)\).*tables found (\d+)\/(\d+)/.exec(stdout);
  if (!m) throw new Error(`score-tables.mjs said: ${stdout.slice(-300)}`);
  return { f1: Number(m[1]), p: Number(m[2]), r: Number(m[3]), found: Number(m[4]), expected: Number(m[5]), seconds };
}

export async function run(): Promise<QualityRow[]> {
  if (!existsSync(ICDAR)) return [{ name: 'tables (ICDAR 2013 eu)', measured: `no corpus at ${ICDAR}`, target: '-', pass: false }];
  const scores = new Map<string, Score>();
  for (const v of VARIANTS) scores.set(v.label, await score(v.label, v.options));
  await terminateOcr();
  const std = scores.get('standard')!;
  const rows: QualityRow[] = [];
  for (const [label, s] of scores) {
    const measured = `F1 ${s.f1.toFixed(3)} (P ${s.p.toFixed(3)}, R ${s.r.toFixed(3)}), ${s.found}/${s.expected} tables, ${s.seconds.toFixed(1)} s`;
    if (label === 'standard') {
      rows.push({ name: 'tables, standard (default)', measured, target: 'F1 ≥ 0.92, P ≥ 0.93, ≥ 75/76 tables',
        pass: s.f1 >= 0.92 && s.p >= 0.93 && s.found >= 75 });
    } else {
      rows.push({ name: `tables, ${label}`, measured, target: `F1 ≥ standard (${std.f1.toFixed(3)})`, pass: s.f1 >= std.f1 });
    }
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const r of await run()) console.log(`${r.pass ? 'PASS' : 'FAIL'}  ${r.name}: ${r.measured} (target ${r.target})`);
  process.exit(0);
}
