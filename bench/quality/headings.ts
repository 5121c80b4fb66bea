// Headings in the quality bench: texlive manuals that have an outline, converted from a copy
// whose outline was removed (qpdf --empty --pages), so the headings come from the page alone;
// the removed outline is the answer. Reported: recall of the outline's first three levels,
// agreement of the emitted level with the outline depth where a heading was found, and the
// share of emitted headings the outline does not have. The same documents with their outline
// are scored too (the outline-driven path). `tsx bench/quality/headings.ts` runs it alone.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as mupdf from 'mupdf';
import { pdfConverter } from '../../src/converters/pdf.js';
import { bareKey, outlineKey, readOutline } from '../../src/converters/pdf/outline.js';
import { convertWith } from '../../test/helpers/convert-ctx.js';
import { texlivePdfs } from '../corpus.js';
import type { QualityRow } from './types.js';

interface Tally { outline: number; found: number; sameLevel: number; emitted: number; extra: number; docs: number }



/**
 * A heading matches an outline entry when their titles agree with or without the section
 * number ("Installation" printed for the entry "3 Installation", "Chapter 1 Getting Started"
 * for "1 Getting Started"): the bare forms of both sides are compared, as OutlineMatcher does.
 */
function score(markdown: string, entries: ReturnType<typeof readOutline>, t: Tally): void {
  const heads = markdown.split('\n').map((l) => /^(#{1,6}) (.+)$/.exec(l)).filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ level: m[1]!.length, key: outlineKey(m[2]!), bare: bareKey(m[2]!), used: false }));
  const wanted = entries.filter((e) => e.level <= 3);
  const same = (h: { key: string; bare: string }, e: { key: string; bare: string }): boolean =>
    h.key === e.key || (h.bare !== '' && (h.bare === e.key || h.bare === e.bare));
  for (const e of wanted) {
    const h = heads.find((x) => !x.used && same(x, e));
    if (!h) continue;
    h.used = true;
    t.found++;
    if (h.level === e.level) t.sameLevel++;
  }
  t.outline += wanted.length;
  t.emitted += heads.length;
  t.extra += heads.filter((h) => !entries.some((e) => same(h, e))).length;
  t.docs++;
}

export async function run(): Promise<QualityRow[]> {
  let files: ReturnType<typeof texlivePdfs> = [];
  try { files = texlivePdfs(2); } catch { /* not installed */ }
  if (files.length === 0 || spawnSync('qpdf', ['--version']).error) {
    return [{ name: 'headings', measured: 'skipped: needs texlive-latex-base-doc and qpdf (bench:quality installs them)', target: '-', pass: false }];
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-bench-headings-'));
  const bare: Tally = { outline: 0, found: 0, sameLevel: 0, emitted: 0, extra: 0, docs: 0 };
  const withOutline: Tally = { ...bare };
  try {
    for (const f of files) {
      const doc = mupdf.Document.openDocument(readFileSync(f.path), 'application/pdf');
      const entries = readOutline(doc);
      doc.destroy();
      if (entries.filter((e) => e.level <= 3).length < 3) continue;
      const copy = path.join(dir, f.name);
      execFileSync('qpdf', ['--empty', '--pages', f.path, '--', copy], { stdio: 'ignore' });
      score((await convertWith(pdfConverter, copy)).markdown, entries, bare);
      score((await convertWith(pdfConverter, f.path)).markdown, readOutlineFresh(f.path), withOutline);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const rows: QualityRow[] = [];
  for (const [name, t] of [['headings, outline removed', bare], ['headings, with the outline', withOutline]] as const) {
    const recall = t.outline ? t.found / t.outline : 0;
    const agree = t.found ? t.sameLevel / t.found : 0;
    const extra = t.emitted ? t.extra / t.emitted : 0;
    rows.push({
      name,
      measured: `recall ${recall.toFixed(2)}, level agreement ${agree.toFixed(2)}, not in outline ${(extra * 100).toFixed(0)} % (${t.docs} manuals, ${t.outline} entries, ${t.emitted} headings)`,
      target: 'recall ≥ 0.85, levels ≥ 0.7, ≤ 10 % extra',
      pass: recall >= 0.85 && agree >= 0.7 && extra <= 0.1,
    });
  }
  return rows;
}

function readOutlineFresh(file: string): ReturnType<typeof readOutline> {
  const doc = mupdf.Document.openDocument(readFileSync(file), 'application/pdf');
  try { return readOutline(doc); } finally { doc.destroy(); }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const r of await run()) console.log(`${r.pass ? 'PASS' : 'FAIL'}  ${r.name}: ${r.measured} (target ${r.target})`);
  process.exit(0);
}
