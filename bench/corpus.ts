// The documents the scenarios convert, made or found once per run in a temp directory:
// - PDFs: the real LaTeX manuals Debian's texlive-latex-base-doc installs (8–50 pages each, so
//   every one is answered inside the request), or, when they are missing or in --quick mode,
//   multi-page PDFs generated with pdfkit;
// - one 2,000-page PDF: real manuals joined with `mutool merge` (or pdfkit pages without mutool);
// - images: pages of prose typeset by pdfkit and rendered to greyscale PNG by mupdf (scans);
// - .docx: reports made with the docx package (headings, paragraphs, lists, a table).
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import * as mupdf from '../src/converters/shared/mupdf.js';
import PDFDocument from 'pdfkit';
import { Document, HeadingLevel, Packer, Paragraph, Table, TableCell, TableRow, TextRun } from 'docx';

const run = promisify(execFile);
// mupdf prints its repair warnings about the manuals to stderr; the bench only counts pages.
mupdf.setLog({ error: () => {}, warning: () => {} });
export const TEXDOCS = '/usr/share/doc/texlive-doc';

export interface CorpusFile {
  path: string;
  name: string;
  bytes: number;
  /** Pages (PDF), 1 for an image or a Word file. */
  pages: number;
}

const WORDS = ('the of and to in is that for it as was with be by on not he this are or his from at which but have '
  + 'an they you were her all she there would their we him been has when who will more no if out so said what up its '
  + 'about into than them can only other new some could time these two may then do first any my now such like our over '
  + 'man me even most made after also did many before must through back years where much your way well down should '
  + 'because each just those people how too little state good very make world still own see men work long get here '
  + 'between both life being under never day same another know while last might us great old year off come since '
  + 'against go came right used take three document service conversion markdown table figure section result').split(' ');

/** Deterministic prose: `n` words from a seeded generator, as sentences. */
export function prose(seed: number, n: number): string {
  let x = seed * 2654435761 % 4294967296 || 1;
  const out: string[] = [];
  let start = true;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    let w = WORDS[x % WORDS.length]!;
    if (start) w = w[0]!.toUpperCase() + w.slice(1);
    start = false;
    if (i % 13 === 12 || i === n - 1) { w += '.'; start = true; }
    out.push(w);
  }
  return out.join(' ');
}

function finish(doc: PDFKit.PDFDocument): Promise<Buffer> {
  const chunks: Buffer[] = [];
  doc.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  doc.end();
  return done;
}

/** A report of `pages` pages: a heading, prose paragraphs and a small table on each page. */
async function pdfkitReport(pages: number, seed: number): Promise<Buffer> {
  const doc = new PDFDocument({ size: 'A4', margin: 72, autoFirstPage: false });
  for (let p = 1; p <= pages; p++) {
    doc.addPage();
    doc.font('Helvetica-Bold').fontSize(16).text(`Section ${p}: ${prose(seed + p, 4).replace(/\.$/, '')}`);
    doc.moveDown(0.5);
    for (let k = 0; k < 4; k++) doc.font('Helvetica').fontSize(11).text(prose(seed * 31 + p * 7 + k, 70)).moveDown(0.5);
    const top = doc.y + 6;
    ['Item', 'Count', 'Share'].forEach((h, j) => doc.font('Helvetica-Bold').text(h, 72 + j * 140, top, { lineBreak: false }));
    for (let r = 1; r <= 3; r++) {
      [`Row ${r}`, String(r * 17 + p), `${(r * 3.7).toFixed(1)} %`]
        .forEach((c, j) => doc.font('Helvetica').text(c, 72 + j * 140, top + r * 16, { lineBreak: false }));
    }
    doc.x = 72;
    doc.y = top + 80;
  }
  return finish(doc);
}

function pageCount(file: string): number {
  const d = mupdf.Document.openDocument(readFileSync(file), 'application/pdf');
  try {
    return d.countPages();
  } finally {
    d.destroy();
  }
}

function listPdfs(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...listPdfs(p));
    else if (e.name.endsWith('.pdf')) out.push(p);
  }
  return out;
}

function fileOf(p: string, pages: number): CorpusFile {
  return { path: p, name: path.basename(p), bytes: statSync(p).size, pages };
}

/** The real manuals of 8–50 pages, in path order, every `step`-th one (deterministic). */
export function texlivePdfs(step: number): CorpusFile[] {
  const all = listPdfs(TEXDOCS).sort();
  const picked: CorpusFile[] = [];
  for (const p of all) {
    const n = pageCount(p);
    if (n >= 8 && n <= 50) picked.push(fileOf(p, n));
  }
  return picked.filter((_, i) => i % step === 0);
}

export async function generatedPdfs(dir: string, count: number, pages: number): Promise<CorpusFile[]> {
  mkdirSync(dir, { recursive: true });
  const out: CorpusFile[] = [];
  for (let i = 0; i < count; i++) {
    const p = path.join(dir, `report-${i + 1}.pdf`);
    writeFileSync(p, await pdfkitReport(pages, i + 1));
    out.push(fileOf(p, pages));
  }
  return out;
}

/** One PDF of exactly `pages` pages: real manuals joined by mutool when `real`, else pdfkit. */
export async function bigPdf(dir: string, pages: number, real: boolean): Promise<CorpusFile> {
  mkdirSync(dir, { recursive: true });
  const out = path.join(dir, `big-${pages}.pdf`);
  if (real) {
    const books = ['latex/l3kernel/source3.pdf', 'latex/base/source2e.pdf', 'latex/hyperref/hyperref.pdf']
      .map((b) => path.join(TEXDOCS, b));
    const args = ['merge', '-o', out];
    let left = pages;
    for (const b of books) {
      if (left <= 0) break;
      const n = Math.min(left, pageCount(b));
      args.push(b, `1-${n}`);
      left -= n;
    }
    if (left === 0) {
      await run('mutool', args, { maxBuffer: 16 * 1024 * 1024 });
      return fileOf(out, pageCount(out));
    }
  }
  writeFileSync(out, await pdfkitReport(pages, 7));
  return fileOf(out, pages);
}

/** Greyscale PNG scans of `lines` lines of prose each (pdfkit text rendered by mupdf at `dpi`). */
export async function scanImages(dir: string, count: number, lines: number, dpi = 150): Promise<CorpusFile[]> {
  mkdirSync(dir, { recursive: true });
  const out: CorpusFile[] = [];
  for (let i = 0; i < count; i++) {
    const width = 612;
    const doc = new PDFDocument({ size: [width, 60 + lines * 22], margin: 30 });
    doc.font('Helvetica-Bold').fontSize(15).text(`Scanned note ${i + 1}`).moveDown(0.3);
    doc.font('Helvetica').fontSize(12).text(prose(1000 + i, lines * 11), { width: width - 60 });
    const pdf = mupdf.Document.openDocument(await finish(doc), 'application/pdf');
    const page = pdf.loadPage(0);
    const pix = page.toPixmap(mupdf.Matrix.scale(dpi / 72, dpi / 72), mupdf.ColorSpace.DeviceGray, false, true);
    const p = path.join(dir, `scan-${i + 1}.png`);
    writeFileSync(p, pix.asPNG());
    pix.destroy();
    page.destroy();
    pdf.destroy();
    out.push(fileOf(p, 1));
  }
  return out;
}

/** Word reports of `sections` sections: heading, paragraphs, a bulleted list and a table each. */
export async function wordFiles(dir: string, count: number, sections: number): Promise<CorpusFile[]> {
  mkdirSync(dir, { recursive: true });
  const out: CorpusFile[] = [];
  for (let i = 0; i < count; i++) {
    const children: Array<Paragraph | Table> = [new Paragraph({ text: `Report ${i + 1}`, heading: HeadingLevel.TITLE })];
    for (let s = 0; s < sections; s++) {
      const seed = i * 100 + s;
      children.push(new Paragraph({ text: `Part ${s + 1}: ${prose(seed, 3).replace(/\.$/, '')}`, heading: HeadingLevel.HEADING_1 }));
      children.push(new Paragraph({ children: [new TextRun(prose(seed + 1, 60)), new TextRun({ text: ' Key point.', bold: true })] }));
      children.push(new Paragraph(prose(seed + 2, 80)));
      for (let k = 0; k < 3; k++) children.push(new Paragraph({ text: prose(seed + 10 + k, 8), bullet: { level: 0 } }));
      children.push(new Table({
        rows: [['Name', 'Value', 'Note'], ...[1, 2, 3].map((r) => [`Row ${r}`, String(r * seed), prose(seed + r, 3)])]
          .map((cells) => new TableRow({ children: cells.map((c) => new TableCell({ children: [new Paragraph(c)] })) })),
      }));
    }
    const p = path.join(dir, `report-${i + 1}.docx`);
    writeFileSync(p, await Packer.toBuffer(new Document({ sections: [{ children }] })));
    out.push(fileOf(p, 1));
  }
  return out;
}
