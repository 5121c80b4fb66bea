// Opening a PDF (pdf/open.ts): a file up to WHOLE_FILE_BYTES is read once and mupdf's reads are
// served from memory; a larger one is read from its descriptor piece by piece. Both must give
// mupdf the same bytes, hold no descriptor they do not need, and refuse a broken file alike.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { fileSource, openPdf, WHOLE_FILE_BYTES } from '../../src/converters/pdf/open.js';
import { ApiError } from '../../src/errors.js';
import * as build from '../fixtures/build/pdf.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pdf-open-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** Every page's text, as mupdf reads it. */
function textOf(file: string, wholeUpTo: number): string[] {
  const pdf = openPdf(file, wholeUpTo);
  try {
    const pages: string[] = [];
    for (let i = 0; i < pdf.pageCount; i++) {
      const page = pdf.doc.loadPage(i);
      try {
        const stext = page.toStructuredText('');
        try { pages.push(stext.asText()); } finally { stext.destroy(); }
      } finally {
        page.destroy();
      }
    }
    return pages;
  } finally {
    pdf.close();
  }
}

const openFds = (): number => readdirSync('/proc/self/fd').length;

t.test('both sources give the bytes of the file at any position, and nothing past its end', async (t) => {
  const file = await build.buildReportPdf(dir);
  const bytes = readFileSync(file);
  t.ok(bytes.length > 2000, 'a file of some size');
  for (const wholeUpTo of [WHOLE_FILE_BYTES, 0]) {
    const source = fileSource(file, wholeUpTo);
    try {
      t.equal(source.fileSize(), bytes.length, 'its size');
      // mupdf's own pattern (8 KiB pieces, going back), odd sizes and offsets, the last bytes
      const reads = [[0, 8192], [Math.max(0, bytes.length - 8192), 8192], [1, 7], [bytes.length >> 1, 8192], [3, 1], [bytes.length - 5, 8192],
        [bytes.length, 8192], [bytes.length + 10, 16]] as const;
      for (const [position, length] of reads) {
        const memory = new Uint8Array(length + 16).fill(0xee);
        const n = source.read(memory, 16, length, position);
        const want = bytes.subarray(position, Math.min(bytes.length, position + length));
        t.equal(n, want.length, `read ${length} at ${position}: ${want.length} bytes`);
        t.same(Buffer.from(memory.subarray(16, 16 + n)), want, 'the file\'s bytes from that position');
        t.ok(memory.subarray(0, 16).every((b) => b === 0xee), 'nothing written before the offset');
      }
    } finally {
      source.close();
    }
  }
});

t.test('read whole and read from the descriptor, mupdf sees the same document', async (t) => {
  t.ok(WHOLE_FILE_BYTES >= 1024 * 1024, 'ordinary PDFs are read whole');
  const files = [await build.buildReportPdf(dir), await build.buildSectionsPdf(dir, true), await build.buildRtlPdf(dir)];
  for (const file of files) {
    const whole = textOf(file, WHOLE_FILE_BYTES);
    const pieces = textOf(file, 0);
    t.ok(whole.length > 0 && whole.join('').trim().length > 100, `${path.basename(file)} has text`);
    t.same(whole, pieces, `${path.basename(file)}: the same text either way`);
  }
});

t.test('a file read whole holds no descriptor while open; one read in pieces holds one until closed', async (t) => {
  const file = await build.buildReportPdf(dir);
  const before = openFds();
  const whole = openPdf(file);
  t.equal(openFds(), before, 'read whole: the descriptor is closed at once');
  whole.close();
  const pieces = openPdf(file, 0);
  t.equal(openFds(), before + 1, 'read in pieces: one descriptor while open');
  pieces.close();
  t.equal(openFds(), before, 'and none after close');
});

t.test('a broken file is refused the same way on both paths, leaving no descriptor', async (t) => {
  const good = readFileSync(await build.buildReportPdf(dir));
  const cut = path.join(dir, 'cut.pdf');
  writeFileSync(cut, good.subarray(0, 200));
  const notPdf = path.join(dir, 'not.pdf');
  writeFileSync(notPdf, 'plain text, not a PDF at all');
  const before = openFds();
  for (const file of [cut, notPdf]) {
    for (const wholeUpTo of [WHOLE_FILE_BYTES, 0]) {
      let caught: unknown;
      try { openPdf(file, wholeUpTo).close(); } catch (err) { caught = err; }
      t.ok(caught instanceof ApiError && caught.code === 'invalid_document',
        `${path.basename(file)} read ${wholeUpTo ? 'whole' : 'in pieces'}: invalid_document`);
    }
  }
  t.equal(openFds(), before, 'no descriptor left open');
});
