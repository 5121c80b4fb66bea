// Headings in the quality bench: texlive manuals that have an outline, converted from a copy
// whose outline was removed (qpdf --empty --pages), so the headings come from the page alone;
// the removed outline is the answer. Reported: recall of the outline's first three levels,
// agreement of the emitted level with the outline depth where a heading was found, and the
// share of emitted headings the outline does not have. The same documents with their outline
// are scored too (the outline-driven path). The fair scoring (judged against the targets) takes
// an outline title that is a short form of the printed one on its page as found; the strict one
// (titles equal with or without their number) is printed beside it. Both judge every emitted
// heading: a document's title, a "Contents" or a numbered section deeper than the outline goes
// counts as not in the outline. `tsx bench/quality/headings.ts` runs it alone.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as mupdf from '../../src/converters/shared/mupdf.js';
import { pdfConverter } from '../../src/converters/pdf.js';
import { numberDepth } from '../../src/converters/pdf/headings.js';
import { bareKey, outlineKey, readOutline } from '../../src/converters/pdf/outline.js';
import { convertWith } from '../../test/helpers/convert-ctx.js';
import { texlivePdfs } from '../corpus.js';
import type { QualityRow } from './types.js';

interface Tally { outline: number; found: number; sameLevel: number; emitted: number; extra: number; docs: number }

const tally = (): Tally => ({ outline: 0, found: 0, sameLevel: 0, emitted: 0, extra: 0, docs: 0 });

interface Head { level: number; key: string; bare: string; page: number; depth: number; used: boolean }
type Entry = ReturnType<typeof readOutline>[number];

/** The headings of the Markdown with the page each is on (from the page markers). */
function headsOf(markdown: string): Head[] {
  const out: Head[] = [];
  let page = 1;
  for (const l of markdown.split('\n')) {
    const marker = /^<!-- page (\d+) -->$/.exec(l);
    if (marker) { page = Number(marker[1]); continue; }
    const m = /^(#{1,6}) (.+)$/.exec(l);
    // a footnote mark after a title ("3 Colour¹") is not part of it
    const text = m?.[2]!.replace(/[⁰¹²³⁴⁵⁶⁷⁸⁹∗†‡]+$/u, '');
    if (m) out.push({ level: m[1]!.length, key: outlineKey(text!), bare: bareKey(text!), page, depth: numberDepth(text!), used: false });
  }
  return out;
}

/**
 * A heading is an outline entry's when their titles agree with or without the section number
 * ("Installation" printed for the entry "3 Installation", "Chapter 1 Getting Started" for
 * "1 Getting Started"): the bare forms of both sides are compared, as OutlineMatcher does.
 */
const same = (h: Head, e: Entry): boolean => h.key === e.key || (h.bare !== '' && (h.bare === e.key || h.bare === e.bare));

/**
 * Fair matching adds what the strict one misses though the heading is the entry's: an outline
 * title that is a short form of the printed one (\section[aliascnt]{The aliascnt package},
 * "1.1.1 Options" for "1.1.1 Options for selecting pages"), taken only on the entry's page or
 * next to it, for entries of four letters or more, and where both carry a section number only
 * with the same number.
 */
const shortForm = (h: Head, e: Entry): boolean => Math.abs(h.page - e.page) <= 1 &&
  ((e.key.length >= 4 && h.key.includes(e.key)) ||
    (e.bare.length >= 4 && h.bare.includes(e.bare) && (h.depth === 0 || e.bare === e.key)));

/**
 * Scores one document into `strict` and `fair`. Recall and level agreement: each entry of the
 * first three levels takes the first unused heading that matches it. Extra: headings that match
 * no entry of any level.
 */
function score(markdown: string, entries: readonly Entry[], strict: Tally, fair: Tally): void {
  for (const [t, loose] of [[strict, false], [fair, true]] as const) {
    const heads = headsOf(markdown);
    const matches = (h: Head, e: Entry): boolean => same(h, e) || (loose && shortForm(h, e));
    const wanted = entries.filter((e) => e.level <= 3);
    for (const e of wanted) {
      const h = heads.find((x) => !x.used && same(x, e)) ?? (loose ? heads.find((x) => !x.used && shortForm(x, e)) : undefined);
      if (!h) continue;
      h.used = true;
      t.found++;
      if (h.level === e.level) t.sameLevel++;
    }
    t.outline += wanted.length;
    t.emitted += heads.length;
    t.extra += heads.filter((h) => !entries.some((e) => matches(h, e))).length;
    t.docs++;
  }
}

export async function run(): Promise<QualityRow[]> {
  let files: ReturnType<typeof texlivePdfs> = [];
  try { files = texlivePdfs(2); } catch { /* not installed */ }
  if (files.length === 0 || spawnSync('qpdf', ['--version']).error) {
    return [{ name: 'headings', measured: 'skipped: needs texlive-latex-base-doc and qpdf (bench:quality installs them)', target: '-', pass: false }];
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-bench-headings-'));
  const bare = { strict: tally(), fair: tally() };
  const withOutline = { strict: tally(), fair: tally() };
  try {
    for (const f of files) {
      const doc = mupdf.Document.openDocument(readFileSync(f.path), 'application/pdf');
      const entries = readOutline(doc);
      doc.destroy();
      if (entries.filter((e) => e.level <= 3).length < 3) continue;
      const copy = path.join(dir, f.name);
      execFileSync('qpdf', ['--empty', '--pages', f.path, '--', copy], { stdio: 'ignore' });
      score((await convertWith(pdfConverter, copy)).markdown, entries, bare.strict, bare.fair);
      score((await convertWith(pdfConverter, f.path)).markdown, readOutlineFresh(f.path), withOutline.strict, withOutline.fair);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const rows: QualityRow[] = [];
  const rates = (t: Tally): { recall: number; agree: number; extra: number } => ({
    recall: t.outline ? t.found / t.outline : 0,
    agree: t.found ? t.sameLevel / t.found : 0,
    extra: t.emitted ? t.extra / t.emitted : 0,
  });
  const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;
  for (const [name, both] of [['headings, outline removed', bare], ['headings, with the outline', withOutline]] as const) {
    const f = rates(both.fair), s = rates(both.strict), t = both.fair;
    rows.push({
      name,
      measured: `recall ${f.recall.toFixed(2)}, level agreement ${f.agree.toFixed(2)}, not in outline ${pct(f.extra)} ` +
        `(strict matching: ${s.recall.toFixed(2)} / ${s.agree.toFixed(2)} / ${pct(s.extra)}; ${t.docs} manuals, ${t.outline} entries, ${t.emitted} headings)`,
      target: 'recall ≥ 0.85, levels ≥ 0.7, ≤ 10 % extra',
      pass: f.recall >= 0.85 && f.agree >= 0.7 && f.extra <= 0.1,
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
