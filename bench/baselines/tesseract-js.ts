// Scenario C's baseline: tesseract.js called directly, one worker per thread docpipe's pool has,
// with the model and settings docpipe's OCR uses (src/converters/shared/ocr.ts): LSTM "best_int"
// English from node_modules, automatic page segmentation, 300 dpi. Whole corpus passes until
// `minSeconds` is filled.
import { readFileSync } from 'node:fs';
import Tesseract from 'tesseract.js';
import { ocrWorkerOptions } from '../../src/converters/shared/ocr.js';
import type { CorpusFile } from '../corpus.js';

export interface TesseractJsResult {
  rate: number;
  images: number;
  seconds: number;
  passes: number;
  workers: number;
  characters: number;
}

/** `warmup`: one image per worker first, then whole passes until `warmSeconds` from the start
 *  (unmeasured), as docpipe's side of scenario C is warmed. */
export async function runTesseractJs(files: readonly CorpusFile[], workers: number, minSeconds: number, warmup = true,
  warmSeconds = 0): Promise<TesseractJsResult> {
  const images = files.map((f) => readFileSync(f.path));
  const pool = await Promise.all(Array.from({ length: workers }, async () => {
    const w = await Tesseract.createWorker('eng', Tesseract.OEM.LSTM_ONLY, ocrWorkerOptions());
    await w.setParameters({ tessedit_pageseg_mode: Tesseract.PSM.AUTO, user_defined_dpi: '300' });
    return w;
  }));
  /** One pass over the images, shared out to the workers as each becomes free; its text's length. */
  const pass = async (): Promise<number> => {
    let next = 0;
    let characters = 0;
    await Promise.all(pool.map(async (w) => {
      while (next < images.length) characters += (await w.recognize(images[next++]!)).data.text.length;
    }));
    return characters;
  };
  try {
    // warm-up: one image per worker, then passes until warmSeconds
    const started = performance.now();
    if (warmup) await Promise.all(pool.map((w, i) => w.recognize(images[i % images.length]!)));
    while (warmup && performance.now() - started < warmSeconds * 1000) await pass();
    let characters = 0;
    let seconds = 0;
    let passes = 0;
    do {
      const t0 = performance.now();
      characters += await pass();
      seconds += (performance.now() - t0) / 1000;
      passes++;
    } while (seconds < minSeconds);
    const done = passes * images.length;
    return { rate: done / seconds, images: done, seconds, passes, workers, characters };
  } finally {
    await Promise.all(pool.map((w) => w.terminate()));
  }
}
