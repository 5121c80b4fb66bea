// The PDF converter's walk over a page's structured text reads mupdf's WebAssembly module
// directly (pdf/stext.ts): it must see exactly what mupdf.js's own walk sees, character by
// character, and it must be the walk that runs.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import * as mupdf from '../../src/converters/shared/mupdf.js';
import { mupdfWasm } from '../../src/converters/shared/mupdf-module.js';
import { walkStext, walkWithObjects, type StextVisitor } from '../../src/converters/pdf/stext.js';
import * as build from '../fixtures/build/pdf.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pdf-stext-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** Every event of a walk as a line of text (numbers rounded to what a float holds). */
function record(walk: (stext: mupdf.StructuredText, v: StextVisitor) => void, stext: mupdf.StructuredText): string[] {
  const out: string[] = [];
  const n = (x: number) => Math.fround(x).toFixed(3);
  walk(stext, {
    beginLine: () => out.push('line'),
    endLine: () => out.push('end'),
    onChar: (c, quad, baseline, size, font) => out.push(`char ${c} ${[...quad].map(n).join(',')} ${n(baseline)} ${n(size)} ${font}`),
    onImageBlock: (bbox, image) => { out.push(`image ${bbox.map(n).join(',')} ${image.getWidth()}x${image.getHeight()}`); image.destroy(); },
    onVector: (bbox, stroked, rect) => out.push(`vector ${bbox.map(n).join(',')} ${stroked} ${rect}`),
  });
  return out;
}

t.test('the module handle is there once mupdf is loaded through shared/mupdf.ts', async (t) => {
  t.ok(mupdfWasm(), 'the walk reads the module, not mupdf.js objects');
});

t.test('the direct walk sees what mupdf.js sees on pages with text, styles, images and vectors', async (t) => {
  const files = [
    await build.buildReportPdf(dir), await build.buildFigurePdf(dir), await build.buildAlignedTablePdf(dir),
    await build.buildSectionsPdf(dir, true), await build.buildRtlPdf(dir),
  ];
  let chars = 0, images = 0, vectors = 0;
  for (const file of files) {
    const doc = mupdf.Document.openDocument(readFileSync(file), 'application/pdf');
    try {
      for (let i = 0; i < doc.countPages(); i++) {
        const page = doc.loadPage(i);
        const stext = page.toStructuredText('preserve-images,vectors');
        try {
          const direct = record(walkStext, stext);
          const objects = record(walkWithObjects, stext);
          t.same(direct, objects, `${path.basename(file)} page ${i + 1}: the same events`);
          chars += direct.filter((e) => e.startsWith('char ')).length;
          images += direct.filter((e) => e.startsWith('image ')).length;
          vectors += direct.filter((e) => e.startsWith('vector ')).length;
        } finally {
          stext.destroy();
          page.destroy();
        }
      }
    } finally {
      doc.destroy();
    }
  }
  t.ok(chars > 500 && images > 0 && vectors > 0, `characters (${chars}), images (${images}) and vectors (${vectors}) were all compared`);
});

t.test('no file of src/ loads mupdf except through shared/mupdf.ts (the first load decides the handle)', async (t) => {
  const root = path.join(import.meta.dirname, '..', '..', 'src');
  const offenders: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.ts$/.test(name) && !p.endsWith(path.join('shared', 'mupdf.ts')) && /from 'mupdf'|import\('mupdf'\)/.test(readFileSync(p, 'utf8'))) offenders.push(path.relative(root, p));
    }
  };
  walk(root);
  t.same(offenders, []);
});
