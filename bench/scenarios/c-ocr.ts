// C. OCR: images per second through POST /v1/convert/image (image_mode ocr) against tesseract.js
// called directly with as many workers as docpipe has pool threads; native `tesseract` (one
// process per core, OMP_THREAD_LIMIT=1) is reported alongside. The images are scans made here:
// pages of prose typeset by pdfkit and rendered to greyscale PNG by mupdf.
import path from 'node:path';
import { pooled, runCommandBaseline, spread } from '../baselines/commands.js';
import { runTesseractJs } from '../baselines/tesseract-js.js';
import { scanImages } from '../corpus.js';
import { docpipeDocuments } from '../throughput.js';
import { POOL_THREADS, WARM_S } from '../docpipe.js';
import { infoRow, notes, ratioRow, type Scenario } from '../types.js';

export const ocr: Scenario = {
  id: 'C',
  title: 'ocr',
  async run(ctx) {
    const S = 'C ocr';
    const files = await scanImages(path.join(ctx.dir, 'scans'), ctx.quick ? 2 : 12, ctx.quick ? 2 : 10);
    const minSeconds = ctx.quick ? 0 : 15;
    // Each side is loaded WARM_S from its start before it is measured, as B's are: docpipe's
    // OCR went on speeding up for most of a minute after its start (3.05, 3.17, 3.26, 3.28 and
    // 3.43 images/s in five 10 s windows after a 4-image warm-up; its first 8 s window was what
    // this scenario measured until 2026-11-29), while tesseract.js called here did not.
    const warmSeconds = ctx.quick ? 0 : WARM_S;
    ctx.log(`C: ${files.length} scans; tesseract.js ×${POOL_THREADS} directly`);
    const tjsBefore = await runTesseractJs(files, POOL_THREADS, minSeconds, !ctx.quick, warmSeconds);
    let native = null;
    if (ctx.tools.tesseract) {
      ctx.log('C: native tesseract, one process per core');
      native = await runCommandBaseline(files, (f) => ['tesseract', [f.path, '-', '--psm', '3']],
        { minSeconds, unit: () => 1, env: { ...process.env, OMP_THREAD_LIMIT: '1' }, warmup: !ctx.quick });
    }
    const api = await docpipeDocuments(ctx, 'C', 'image', files, minSeconds, warmSeconds);
    // tesseract.js again after docpipe (not in --quick), pooled with the first run
    if (!ctx.quick) ctx.log(`C: tesseract.js ×${POOL_THREADS} directly, again`);
    const tjs = pooled(tjsBefore, ctx.quick ? null : await runTesseractJs(files, POOL_THREADS, minSeconds, true, warmSeconds));
    const mine = { value: api.rate, unit: 'images/s' };
    const note = notes(api.failures > 0 && `${api.failures} of ${api.documents} images did not complete; e.g. ${api.samples[0]}`,
      spread(tjs.runs, 'images/s'));
    return {
      rows: [
        ratioRow(S, 'images/s vs tesseract.js', mine, { value: tjs.rate, unit: 'images/s', label: `tesseract.js ×${tjs.workers}` }, 0.85, note),
        ...(api.warm ? [infoRow(S, 'images/s in the first images after start (vs the measured run)',
          { value: api.warm.rate, unit: 'images/s' }, { value: api.rate, unit: 'images/s', label: 'measured, warm' })] : []),
        infoRow(S, 'images/s vs native tesseract', mine,
          native ? { value: native.rate, unit: 'images/s', label: `tesseract ×${native.processes}` } : null,
          native ? undefined : 'tesseract not installed'),
      ],
      raw: { corpus: { files: files.length, bytes: files.reduce((a, f) => a + f.bytes, 0) }, tesseract_js: tjs, native, docpipe: api },
    };
  },
};
