// The shared OCR worker: its language data comes from node_modules (proved by running it in a
// child process where every network call throws), and its results become Markdown paragraphs.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import sharp from 'sharp';
import * as mupdf from 'mupdf';
import { netpbm, ocrBitmap, OCR_LANGUAGES, ocrMarkdown, ocrWorkerOptions, recognize, terminateOcr, type OcrLine } from '../../src/converters/shared/ocr.js';
import { renderTextPng } from '../fixtures/build/pdf.js';

const repo = path.resolve(import.meta.dirname, '../..');

t.teardown(terminateOcr);

t.test('the worker reads its models from node_modules and caches nothing', async (t) => {
  const opts = ocrWorkerOptions();
  t.ok(path.isAbsolute(opts.langPath!), 'langPath is a local absolute path, not a URL');
  for (const lang of OCR_LANGUAGES) {
    const model = path.join(opts.langPath!, `${lang}.traineddata.gz`);
    t.ok(existsSync(model), `the gzip model of ${lang} the worker asks for is there`);
    t.match(realpathSync(model), new RegExp(`node_modules[/\\\\]@tesseract\\.js-data[/\\\\]${lang}[/\\\\]`), `and is the ${lang} package's own`);
  }
  t.equal(opts.gzip, true);
  t.equal(opts.cacheMethod, 'none');
});

t.test('OCR starts and reads text with every network call failing', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-ocr-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'line.png'), await renderTextPng(['Offline recognition works fine.'], { fontSize: 18 }));
  // Preloaded in the process and in every worker thread (tesseract runs in one): any attempt to
  // reach the network is reported on stderr and fails.
  const blocker = path.join(dir, 'block-network.mjs');
  writeFileSync(blocker, `
import net from 'node:net'; import dns from 'node:dns'; import http from 'node:http'; import https from 'node:https';
import { writeSync } from 'node:fs'; import { threadId } from 'node:worker_threads';
const deny = (what) => () => { writeSync(2, 'NETWORK ATTEMPT ' + what + '\\n'); throw new Error('network is unreachable in this test'); };
globalThis.fetch = async () => deny('fetch')();
net.Socket.prototype.connect = deny('net.connect');
net.connect = net.createConnection = deny('net.createConnection');
dns.lookup = deny('dns.lookup');
http.request = http.get = deny('http.request');
https.request = https.get = deny('https.request');
writeSync(2, 'BLOCKER LOADED IN THREAD ' + threadId + '\\n');
`);
  const child = path.join(dir, 'child.mts');
  writeFileSync(child, `
import { recognize, ocrMarkdown, terminateOcr } from ${JSON.stringify(pathToFileURL(path.join(repo, 'src/converters/shared/ocr.ts')).href)};
import { readFileSync } from 'node:fs';
const result = await recognize(readFileSync(${JSON.stringify(path.join(dir, 'line.png'))}));
process.stdout.write(JSON.stringify({ markdown: ocrMarkdown(result) }));
await terminateOcr();
`);
  const run = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), '--import', pathToFileURL(blocker).href, child], {
    cwd: dir, encoding: 'utf8', timeout: 50_000,
    env: { ...process.env, HTTP_PROXY: 'http://127.0.0.1:9', HTTPS_PROXY: 'http://127.0.0.1:9' },
  });
  t.equal(run.status, 0, `the child exits by itself after terminateOcr (stderr: ${run.stderr.slice(-500)})`);
  t.notMatch(run.stderr, /NETWORK ATTEMPT/, 'nothing tried the network');
  t.match(run.stderr, /BLOCKER LOADED IN THREAD [1-9]/, 'the blocker was active inside the tesseract worker thread too');
  t.match(JSON.parse(run.stdout || '{}').markdown ?? '', /Offline recognition works fine/);
  t.notOk(existsSync(path.join(dir, 'eng.traineddata')), 'no model copy was written to the working directory');
});

t.test('recognize refuses to start when the signal is already aborted', async (t) => {
  const ac = new AbortController();
  ac.abort(new Error('client went away'));
  await t.rejects(recognize(Buffer.from('not even an image'), ac.signal), /client went away/);
});

t.test('a bitmap handed over as PGM or PPM reads as its PNG does', async (t) => {
  const png = await renderTextPng(['Invoice 4471 was paid on 12 March.', 'The balance carried forward is zero.'], { fontSize: 16 });
  const grey = await sharp(png).greyscale().raw().toBuffer({ resolveWithObject: true });
  t.equal(grey.info.channels, 1);
  const pgm = netpbm(grey.data, grey.info.width, grey.info.height, 1);
  t.equal(pgm.subarray(0, 3).toString('latin1'), 'P5\n', 'a binary PGM');
  t.equal(pgm.length, `P5\n${grey.info.width} ${grey.info.height}\n255\n`.length + grey.info.width * grey.info.height, 'its header and every pixel, nothing else');
  const rgb = await sharp(png).toColourspace('srgb').removeAlpha().raw().toBuffer({ resolveWithObject: true });
  t.equal(rgb.info.channels, 3);
  const ppm = netpbm(rgb.data, rgb.info.width, rgb.info.height, 3);
  t.equal(ppm.subarray(0, 3).toString('latin1'), 'P6\n', 'a binary PPM');
  const fromPng = await recognize(png);
  t.match(ocrMarkdown(fromPng), /Invoice 4471 was paid on 12 March\.[\s\S]*balance carried forward is zero/);
  t.same(await recognize(pgm), fromPng, 'the PGM gives the very lines, boxes and confidences of the PNG');
  t.same(await recognize(ppm), fromPng, 'and so does the PPM');
});

t.test('netpbm writes only what it can describe', async (t) => {
  const px = new Uint8Array(12);
  t.throws(() => netpbm(px, 2, 3, 2), /2 channels/, 'grey with alpha is not a PGM');
  t.throws(() => netpbm(px, 2, 3, 4), /4 channels/);
  t.throws(() => netpbm(px, 4, 4, 1), /12 bytes for 4 × 4 × 1/, 'too few pixels');
  t.throws(() => netpbm(px, 0, 12, 1), /0 × 12/, 'an empty bitmap');
  t.throws(() => netpbm(px, 1.5, 8, 1), /1.5 × 8/);
  t.same([...netpbm(px, 2, 2, 3).subarray(-12)], [...px], 'the pixels follow the header as they are');
});

t.test('a page bitmap goes to OCR as its pixels: grey or RGB as PGM or PPM, one with alpha as PNG', async (t) => {
  const doc = new mupdf.PDFDocument();
  t.teardown(() => doc.destroy());
  doc.insertPage(-1, doc.addPage([0, 0, 100, 50], 0, doc.newDictionary(), ''));
  const page = doc.loadPage(0);
  t.teardown(() => page.destroy());
  const kinds = [
    { cs: mupdf.ColorSpace.DeviceGray, alpha: false, head: 'P5\n100 50\n255\n', bytes: 100 * 50 },
    { cs: mupdf.ColorSpace.DeviceRGB, alpha: false, head: 'P6\n100 50\n255\n', bytes: 100 * 50 * 3 },
  ];
  for (const k of kinds) {
    const pix = page.toPixmap(mupdf.Matrix.identity, k.cs, k.alpha, true);
    const out = ocrBitmap(pix);
    pix.destroy();
    t.equal(out.subarray(0, k.head.length).toString('latin1'), k.head);
    t.equal(out.length, k.head.length + k.bytes);
    t.ok(out.subarray(k.head.length).every((b) => b === 255), 'a blank page: every sample white, read before the pixmap went');
  }
  const withAlpha = page.toPixmap(mupdf.Matrix.identity, mupdf.ColorSpace.DeviceGray, true, true);
  t.same([...ocrBitmap(withAlpha).subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'grey with alpha: a PNG');
  withAlpha.destroy();
});

const line = (text: string, y: number, size = 30, confidence = 92): OcrLine => ({ text, x0: 100, y0: y, x1: 900, y1: y + size, size, confidence });

t.test('OCR lines become paragraphs, headings and lists by layout', async (t) => {
  const md = ocrMarkdown({
    confidence: 90,
    paragraphs: [
      { x0: 100, y0: 100, x1: 900, y1: 170, lines: [line('Annual Summary', 100, 64)] },
      {
        x0: 100, y0: 200, x1: 900, y1: 300,
        lines: [line('The committee met twice and discussed the budg-', 200), line('et for next year in detail.', 235), line('A second paragraph follows the gap.', 330)],
      },
      { x0: 100, y0: 400, x1: 900, y1: 470, lines: [line('+ first point', 400), line('+ second point', 435)] },
    ],
  });
  t.equal(md, [
    '# Annual Summary',
    'The committee met twice and discussed the budget for next year in detail.',
    'A second paragraph follows the gap.',
    '- first point\n- second point',
  ].join('\n\n'));
});

t.test('large type read with little confidence stays text: glyphs that are not letters make no heading', async (t) => {
  // what tesseract made of a page of LaTeX's encoding guide that shows math delimiters: large
  // shapes read as short words at 17–31 %, beside a real title read at 94 %
  const md = ocrMarkdown({
    confidence: 54,
    paragraphs: [
      { x0: 100, y0: 100, x1: 900, y1: 170, lines: [line('Math extension', 100, 64, 94)] },
      { x0: 100, y0: 200, x1: 900, y1: 280, lines: [line('AV', 200, 78, 17)] },
      { x0: 100, y0: 300, x1: 900, y1: 392, lines: [line('SII fun', 300, 92, 27)] },
      { x0: 100, y0: 400, x1: 900, y1: 500, lines: [line('cmex10, OMX', 400), line('the delimiters of TeX\'s math extension font', 435)] },
      { x0: 100, y0: 550, x1: 900, y1: 650, lines: [line('in the order of their codes,', 550), line('eight to a row, with the code', 585), line('of each row beside it.', 620)] },
    ],
  });
  t.equal(md, ['# Math extension', 'AV', 'SII fun', 'cmex10, OMX the delimiters of TeX\'s math extension font', 'in the order of their codes, eight to a row, with the code of each row beside it.'].join('\n\n'));
});

t.test('a form\'s label and value in large type stays a line of text, not a heading', async (t) => {
  const md = ocrMarkdown({
    confidence: 93,
    paragraphs: [
      { x0: 100, y0: 100, x1: 900, y1: 160, lines: [line('Admission Record', 100, 60)] },
      { x0: 100, y0: 200, x1: 900, y1: 245, lines: [line('Patient Name: John Smith', 200, 45)] },
      { x0: 100, y0: 300, x1: 900, y1: 400, lines: [line('The patient was admitted in the morning', 300), line('and seen by the doctor on duty at noon.', 335), line('Notes follow on the next page.', 370)] },
    ],
  });
  t.equal(md, ['# Admission Record', 'Patient Name: John Smith', 'The patient was admitted in the morning and seen by the doctor on duty at noon. Notes follow on the next page.'].join('\n\n'));
});
