// The PDF page count read from the cross-reference data (pdf/page-count.ts), which admission
// uses instead of a trip to the converter pool: it must give mupdf's count on every file it
// answers for (tables and streams, object streams, predictors, incremental updates, hybrid
// files), and answer nothing (the pool's mupdf count decides) on anything it cannot read plainly.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import t from 'tap';
import * as mupdf from 'mupdf';
import { countOfPages, quickPageCount } from '../../src/converters/pdf/page-count.js';
import { countPdf } from '../../src/converters/pdf/convert.js';
import { pdfConverter } from '../../src/converters/pdf.js';
import * as build from '../fixtures/build/pdf.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pdf-count-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const mupdfCount = (file: string): number => countPdf(file, { formats: ['markdown'] }).pages;

/** A document of `pages` pages made by mupdf, saved with `options` (e.g. "compress,objstms"). */
function mupdfMade(name: string, pages: number, options: string): string {
  const doc = new mupdf.PDFDocument();
  try {
    for (let i = 0; i < pages; i++) doc.insertPage(-1, doc.addPage([0, 0, 595, 842], 0, {}, `BT 72 712 Td (page ${i + 1}) Tj ET`));
    const file = path.join(dir, name);
    writeFileSync(file, doc.saveToBuffer(options).asUint8Array());
    return file;
  } finally {
    doc.destroy();
  }
}

/** `file` with its last page deleted, saved as an incremental update appended to it. */
function withPageDeleted(file: string, name: string, options: string): string {
  const doc = mupdf.Document.openDocument(readFileSync(file), 'application/pdf') as mupdf.PDFDocument;
  try {
    doc.deletePage(doc.countPages() - 1);
    const out = path.join(dir, name);
    writeFileSync(out, doc.saveToBuffer(options).asUint8Array());
    return out;
  } finally {
    doc.destroy();
  }
}

/** A PDF written by hand whose objects 1…n are `objs` (1 the catalog), listed by `xref`. */
function raw(name: string, objs: ReadonlyArray<string | Buffer>, xref: (offsets: number[], at: number) => Buffer | string): string {
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n%\xe2\xe3\n', 'latin1')];
  let size = parts[0]!.length;
  const offsets: number[] = [];
  objs.forEach((o, i) => {
    offsets.push(size);
    const b = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), typeof o === 'string' ? Buffer.from(o, 'latin1') : o, Buffer.from('\nendobj\n')]);
    parts.push(b);
    size += b.length;
  });
  const tail = xref(offsets, size);
  parts.push(typeof tail === 'string' ? Buffer.from(tail, 'latin1') : tail);
  const file = path.join(dir, name);
  writeFileSync(file, Buffer.concat(parts));
  return file;
}

/** A classic table and trailer for `offsets`, with `extra` in the trailer. */
const table = (extra = '') => (offsets: number[], at: number): string => {
  let s = `xref\n0 ${offsets.length + 1}\n0000000000 65535 f \n`;
  for (const off of offsets) s += `${String(off).padStart(10, '0')} 00000 n \n`;
  return `${s}trailer\n<< /Size ${offsets.length + 1} /Root 1 0 R${extra} >>\nstartxref\n${at}\n%%EOF\n`;
};

/** Rows of a cross-reference stream (type, field 2, field 3; widths 1, 4, 2) with the PNG Up
 *  predictor, as an object placed after `objs`. */
function xrefStream(rows: Array<[number, number, number]>, extra = ''): (offsets: number[], at: number) => Buffer {
  return (offsets, at) => {
    const num = offsets.length + 1;
    const all = [...rows, [1, at, 0] as [number, number, number]];
    const plain = Buffer.alloc(all.length * 7);
    all.forEach(([a, b, c], i) => { plain.writeUInt8(a, i * 7); plain.writeUInt32BE(b, i * 7 + 1); plain.writeUInt16BE(c, i * 7 + 5); });
    const predicted = Buffer.alloc(all.length * 8);
    for (let r = 0; r < all.length; r++) {
      predicted[r * 8] = 2; // Up
      for (let i = 0; i < 7; i++) predicted[r * 8 + 1 + i] = (plain[r * 7 + i]! - (r > 0 ? plain[(r - 1) * 7 + i]! : 0)) & 0xff;
    }
    const data = deflateSync(predicted);
    return Buffer.concat([
      Buffer.from(`${num} 0 obj\n<< /Type /XRef /Size ${num + 1} /Root 1 0 R /W [1 4 2] /Index [0 ${num + 1}] /Filter /FlateDecode `
        + `/DecodeParms << /Columns 7 /Predictor 12 >> /Length ${data.length}${extra} >>\nstream\n`, 'latin1'),
      data,
      Buffer.from(`\nendstream\nendobj\nstartxref\n${at}\n%%EOF\n`, 'latin1'),
    ]);
  };
}

t.test('on the PDFs the suite builds, the count is mupdf\'s', async (t) => {
  const files = [
    await build.buildReportPdf(dir),
    await build.buildManyPagesPdf(dir, 120),
    await build.buildFigurePdf(dir),
    await build.buildScanPdf(dir),
    build.buildLoopingPdf(dir), // the root says 2: mupdf's count reads the same /Count
    mupdfMade('plain.pdf', 3, ''),
    mupdfMade('compressed.pdf', 4, 'compress'),
    mupdfMade('objstms.pdf', 7, 'compress,objstms'),
  ];
  for (const f of files) t.equal(await quickPageCount(f), mupdfCount(f), path.basename(f));
  t.equal(await quickPageCount(files[1]!), 120);
});

t.test('an incremental update is read from its newest section, table or stream', async (t) => {
  for (const [name, options] of [['table', 'compress'], ['stream', 'compress,objstms']] as const) {
    const base = mupdfMade(`inc-${name}.pdf`, 5, options);
    const updated = withPageDeleted(base, `inc-${name}-updated.pdf`, `incremental,${options}`);
    t.ok(readFileSync(updated).subarray(0, readFileSync(base).length).equals(readFileSync(base)), `${name}: the update is appended to the original bytes`);
    t.equal(mupdfCount(updated), 4, `${name}: mupdf counts the updated document`);
    t.equal(await quickPageCount(updated), 4, `${name}: so does the quick count, not the 5 of the first section`);
  }
});

t.test('a cross-reference stream with the PNG Up predictor, objects in an object stream, /Count by reference', async (t) => {
  // Objects: 1 catalog, 2 page tree root (in the object stream 5), 3 page, 4 the count, 5 the
  // object stream holding 2, then the cross-reference stream (6).
  const inStream = '<< /Type /Pages /Kids [3 0 R] /Count 4 0 R >>';
  const header = '2 0 ';
  const packed = deflateSync(Buffer.from(header + inStream, 'latin1'));
  const file = raw('xref-stream.pdf', [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>',
    '1',
    Buffer.concat([Buffer.from(`<< /Type /ObjStm /N 1 /First ${header.length} /Filter /FlateDecode /Length ${packed.length} >>\nstream\n`), packed, Buffer.from('\nendstream')]),
  ], (offsets, at) => xrefStream([
    [0, 0, 65535], [1, offsets[0]!, 0], [2, 5, 0], [1, offsets[2]!, 0], [1, offsets[3]!, 0], [1, offsets[4]!, 0],
  ])(offsets, at));
  t.equal(mupdfCount(file), 1, 'mupdf reads the hand-made file');
  t.equal(await quickPageCount(file), 1);
});

t.test('a hybrid file: the table\'s /XRefStm lists the objects kept in object streams', async (t) => {
  // The table lists 1, 3 and 5; the page tree root (2) is in object stream 5, listed only by the
  // stream that /XRefStm names (object 6, written after the table's objects).
  const inStream = '<< /Type /Pages /Kids [3 0 R] /Count 1 >>';
  const header = '2 0 ';
  const packed = deflateSync(Buffer.from(header + inStream, 'latin1'));
  const objs: Array<string | Buffer> = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    'null',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>',
    'null',
    Buffer.concat([Buffer.from(`<< /Type /ObjStm /N 1 /First ${header.length} /Filter /FlateDecode /Length ${packed.length} >>\nstream\n`), packed, Buffer.from('\nendstream')]),
  ];
  const file = raw('hybrid.pdf', objs, (offsets, at) => {
    const rows: Array<[number, number, number]> = [[2, 5, 0]];
    const stm = Buffer.alloc(rows.length * 7);
    rows.forEach(([a, b, c], i) => { stm.writeUInt8(a, i * 7); stm.writeUInt32BE(b, i * 7 + 1); stm.writeUInt16BE(c, i * 7 + 5); });
    const xrefStm = Buffer.from(`6 0 obj\n<< /Type /XRef /Size 7 /W [1 4 2] /Index [2 1] /Length ${stm.length} >>\nstream\n`, 'latin1');
    const stmObj = Buffer.concat([xrefStm, stm, Buffer.from('\nendstream\nendobj\n')]);
    const tableAt = at + stmObj.length;
    let s = 'xref\n0 6\n0000000000 65535 f \n';
    offsets.forEach((off, i) => { s += i === 1 ? '0000000000 00001 f \n' : `${String(off).padStart(10, '0')} 00000 n \n`; });
    s += `trailer\n<< /Size 7 /Root 1 0 R /XRefStm ${at} >>\nstartxref\n${tableAt}\n%%EOF\n`;
    return Buffer.concat([stmObj, Buffer.from(s, 'latin1')]);
  });
  t.equal(await quickPageCount(file), 1);
});

t.test('whatever cannot be read plainly is left to mupdf: no answer, never a wrong one', async (t) => {
  const cases: Record<string, string> = {
    encrypted: await build.buildEncryptedPdf(dir),
    'noise after a header': build.buildCorruptPdf(dir),
    'no pages (/Count 0)': raw('zero.pdf', ['<< /Type /Catalog /Pages 2 0 R >>', '<< /Type /Pages /Kids [] /Count 0 >>'], table()),
    '/Count not a number': raw('name-count.pdf', ['<< /Type /Catalog /Pages 2 0 R >>', '<< /Type /Pages /Kids [] /Count /Many >>'], table()),
    'an offset that lands on another object': raw('shifted.pdf', ['<< /Type /Catalog /Pages 2 0 R >>', '<< /Type /Pages /Kids [] /Count 3 >>'],
      (offsets, at) => table()([offsets[0]!, offsets[0]!], at)),
    'startxref past the end': (() => {
      const f = raw('past.pdf', ['<< /Type /Catalog /Pages 2 0 R >>', '<< /Type /Pages /Kids [] /Count 3 >>'], table());
      writeFileSync(f, readFileSync(f, 'latin1').replace(/startxref\n\d+/, 'startxref\n99999999'), 'latin1');
      return f;
    })(),
    'sections that name each other as /Prev': raw('loop-prev.pdf', ['<< /Type /Catalog /Pages 9 0 R >>'], (offsets, at) =>
      table(` /Prev ${at}`)(offsets, at)),
    'a stream filter other than Flate': raw('lzw.pdf', ['<< /Type /Catalog /Pages 2 0 R >>', '<< /Type /Pages /Kids [] /Count 2 >>'],
      (offsets, at) => Buffer.from(`3 0 obj\n<< /Type /XRef /Size 4 /Root 1 0 R /W [1 4 2] /Filter /LZWDecode /Length 1 >>\nstream\nx\nendstream\nendobj\nstartxref\n${at}\n%%EOF\n`)),
    'cut short': (() => {
      const whole = readFileSync(mupdfMade('cut-source.pdf', 3, 'compress,objstms'));
      const f = path.join(dir, 'cut.pdf');
      writeFileSync(f, whole.subarray(0, whole.length - 40));
      return f;
    })(),
    'a file that is not there': path.join(dir, 'missing.pdf'),
  };
  for (const [what, file] of Object.entries(cases)) t.equal(await quickPageCount(file), undefined, what);
});

t.test('the converter\'s quick count applies the page range as its count does', async (t) => {
  const file = await build.buildManyPagesPdf(dir, 12, 'twelve.pdf');
  const pages = [{ from: 2, to: 4 }, { from: 10, to: null }];
  t.same(await pdfConverter.quickCount!(file, { formats: ['markdown'], pages }), await pdfConverter.count(file, { formats: ['markdown'], pages }));
  t.same(await pdfConverter.quickCount!(file, { formats: ['markdown'], pages }), { pages: 6, units: 6 });
  t.throws(() => countOfPages(12, { formats: ['markdown'], pages: [{ from: 20, to: 30 }] }),
    { code: 'invalid_request', message: /selects no page of this document, which has 12 pages/ });
  t.equal(await pdfConverter.quickCount!(await build.buildEncryptedPdf(dir, 'enc2.pdf'), { formats: ['markdown'] }), undefined,
    'an encrypted file is left to the count on a pool thread');
});
