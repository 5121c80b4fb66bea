// How big the text in a raster is, cheaply, so OCR can scale small type up (tesseract misreads
// type much under 15 px to the em) without scaling up text that is already readable.
// The raster is binarised at Otsu's threshold, ink being the minority side (so light text on a
// dark background works too); the width is cut into vertical strips and in each strip the runs
// of consecutive rows holding ink are the text lines crossing it. Their median height is the
// line height: mostly ascender to baseline (descenders are rarer), about 0.75 of the em in px.
// Contract: a pure function of the pixels; null when the runs do not look like lines of text.

/**
 * Text lines shorter than this (as estimateLineHeight measures them) are scaled up to it before
 * OCR. Measured with tesseract.js on scans of 12 pt prose: lines of 9 px (72 dpi) lose over half
 * their words, from 11–12 px clean type reads without error, and noisy JPEG scans still gain up
 * to 16 px; larger scales gain nothing and cost time.
 */
export const READABLE_LINE = 16;

/** Longest side of an image handed to OCR. */
export const MAX_OCR_SIDE = 5000;

/** The most a w × h raster may be scaled up for OCR: 4×, 40 megapixels, MAX_OCR_SIDE a side
 *  (under 1 when the raster is already past a limit). */
export function ocrScaleLimit(w: number, h: number): number {
  return Math.min(4, Math.sqrt(40e6 / (w * h)), MAX_OCR_SIDE / Math.max(w, h));
}

/** Ink is found per column block of 8 px (x >> 3); strips are made of whole blocks. */
const BLOCK = 8;
/** First-pass strip width in px: a few characters of small type. */
const FIRST_STRIP = 32;
/** Runs shorter than this are specks, rules or underlines, not lines of text. */
const MIN_RUN = 3;
/** Fewer runs than this give no estimate. */
const MIN_RUNS = 24;
/** Share of runs within 1.5× of the median below which the raster is not taken for text. */
const MIN_NEAR = 0.5;

/** Otsu's threshold of a 256-bin histogram: the grey level that best splits it in two. */
function otsu(hist: Uint32Array, total: number): number {
  let sumAll = 0;
  for (let i = 0; i < 256; i++) sumAll += i * hist[i]!;
  let sumB = 0, wB = 0, best = -1, at = 128;
  for (let i = 0; i < 256; i++) {
    wB += hist[i]!;
    if (wB === 0) continue;
    const wF = total - wB;
    if (wF === 0) break;
    sumB += i * hist[i]!;
    const mB = sumB / wB, mF = (sumAll - sumB) / wF;
    const between = wB * wF * (mB - mF) * (mB - mF);
    if (between > best) { best = between; at = i + 1; }
  }
  return at;
}

/**
 * The typical text line height in px of a one-byte-per-pixel greyscale raster (row-major,
 * `width` × `height`), or null when it holds too few line-like runs to tell (a photo, a
 * blank page, a word or two).
 */
export function estimateLineHeight(grey: Uint8Array, width: number, height: number): number | null {
  const total = width * height;
  if (width < 1 || height < 1 || grey.length < total) return null;
  // every third pixel is plenty for the threshold
  const hist = new Uint32Array(256);
  let sampled = 0;
  for (let i = 0; i < total; i += 3, sampled++) hist[grey[i]!]++;
  const t = otsu(hist, sampled);
  let dark = 0;
  for (let i = 0; i < t; i++) dark += hist[i]!;
  if (dark === 0 || dark === sampled) return null;
  // ink is grey < t, or grey >= t for light on dark: the flip makes both one comparison
  const flip = dark <= sampled - dark ? 0 : 255;
  const below = flip ? 256 - t : t;

  // which rows of each 8 px wide column block hold ink; the first ink found skips the block
  const blocks = Math.ceil(width / BLOCK);
  const rows = new Uint8Array(blocks * height);
  for (let y = 0; y < height; y++) {
    const row = y * width;
    for (let x = 0; x < width; x++) {
      if ((grey[row + x]! ^ flip) < below) { rows[(x >> 3) * height + y] = 1; x |= 7; }
    }
  }
  // a strip a few characters wide crosses ascenders in nearly every line, one narrower than a
  // character often only its x-height band: the first estimate sets a strip width of about
  // three characters for the second
  const first = medianRun(rows, blocks, height, FIRST_STRIP / BLOCK);
  if (first === null) return null;
  // a line or two of large type may not give enough runs in wide strips; the first estimate
  // (on the low side for large type, which errs towards scaling up) stands then
  return medianRun(rows, blocks, height, Math.max(2, Math.round((4 * first) / BLOCK))) ?? first;
}

/** The median height of the ink runs in strips of `per` blocks, or null when they are too few or too mixed. */
function medianRun(rows: Uint8Array, blocks: number, height: number, per: number): number | null {
  const runs: number[] = [];
  for (let s = 0; s < blocks; s += per) {
    const last = Math.min(blocks, s + per);
    let run = 0;
    for (let y = 0; y < height; y++) {
      let hit = 0;
      for (let b = s; b < last && !hit; b++) hit = rows[b * height + y]!;
      // a run touching the top edge is cut off: -1 marks it so it is not counted, and one
      // still open at the bottom edge never is
      if (hit) run = y === 0 || run < 0 ? -1 : run + 1;
      else {
        if (run >= MIN_RUN) runs.push(run);
        run = 0;
      }
    }
  }
  if (runs.length < MIN_RUNS) return null;
  runs.sort((a, b) => a - b);
  const median = runs[runs.length >> 1]!;
  // lines of one text give runs of about one height; a photo's blobs give any height
  let near = 0;
  for (const r of runs) if (r >= median / 1.5 && r <= median * 1.5) near++;
  return near >= runs.length * MIN_NEAR ? median : null;
}
