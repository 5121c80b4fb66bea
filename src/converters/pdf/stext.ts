// Walking a page's structured text: every character with its quad, baseline, size and font, and
// the image and vector blocks. mupdf.js's own StructuredText.walk makes a Font object (with a
// finalizer registration) and five small arrays per character, which cost a conversion at
// `fast` about as much time as mupdf's own text extraction. This walk reads the same C accessors
// through the module handle (shared/mupdf-module.ts) and hands the visitor plain numbers: no
// object per character. Where the handle is not there, it goes through mupdf.js's walk and gives
// the visitor the same values.
// Contract: `quad` is reused from one character to the next (copy what is kept); `font` is the
// font's address, valid while the StructuredText lives (wrap it in `new mupdf.Font(font)` to ask
// about it, and destroy that); the visitor owns `image` (destroy it).
import * as mupdf from '../shared/mupdf.js';
import { mupdfWasm } from '../shared/mupdf-module.js';

export type Bbox = readonly [number, number, number, number];

export interface StextVisitor {
  beginLine(): void;
  endLine(): void;
  /** One character. quad: x0 y0 x1 y1 x2 y2 x3 y3 (upper left, upper right, lower left, lower right). */
  onChar(c: string, quad: Float64Array, baseline: number, size: number, font: number): void;
  onImageBlock(bbox: Bbox, image: mupdf.Image): void;
  onVector(bbox: Bbox, stroked: boolean, rect: boolean): void;
}

const TEXT = 0;
const IMAGE = 1;
const VECTOR = 3;

const charOf = (code: number): string => (code <= 0xffff ? String.fromCharCode(code) : String.fromCodePoint(code));

export function walkStext(stext: mupdf.StructuredText, v: StextVisitor): void {
  const w = mupdfWasm();
  if (!w) {
    walkWithObjects(stext, v);
    return;
  }
  const quad = new Float64Array(8);
  const rect = (ptr: number): Bbox => {
    const heap = w.HEAPF32;
    const a = ptr >> 2;
    return [heap[a]!, heap[a + 1]!, heap[a + 2]!, heap[a + 3]!];
  };
  for (let block = w._wasm_stext_page_get_first_block(stext.pointer); block; block = w._wasm_stext_block_get_next(block)) {
    const type = w._wasm_stext_block_get_type(block);
    if (type === TEXT) {
      for (let line = w._wasm_stext_block_get_first_line(block); line; line = w._wasm_stext_line_get_next(line)) {
        v.beginLine();
        for (let ch = w._wasm_stext_line_get_first_char(line); ch; ch = w._wasm_stext_char_get_next(ch)) {
          const code = w._wasm_stext_char_get_c(ch);
          const size = w._wasm_stext_char_get_size(ch);
          const font = w._wasm_stext_char_get_font(ch);
          const o = w._wasm_stext_char_get_origin(ch) >> 2;
          const baseline = w.HEAPF32[o + 1]!;
          const q = w._wasm_stext_char_get_quad(ch) >> 2;
          const heap = w.HEAPF32;
          for (let i = 0; i < 8; i++) quad[i] = heap[q + i]!;
          v.onChar(charOf(code), quad, baseline, size, font);
        }
        v.endLine();
      }
    } else if (type === IMAGE) {
      v.onImageBlock(rect(w._wasm_stext_block_get_bbox(block)), new mupdf.Image(w._wasm_stext_block_get_image(block) as unknown as mupdf.Image['pointer']));
    } else if (type === VECTOR) {
      const bbox = rect(w._wasm_stext_block_get_bbox(block));
      const flags = w._wasm_stext_block_get_v_flags(block);
      v.onVector(bbox, (flags & 1) !== 0, (flags & 2) !== 0);
    }
  }
}

/** The same walk through mupdf.js's API (one Font object and a few arrays per character). */
export function walkWithObjects(stext: mupdf.StructuredText, v: StextVisitor): void {
  const quad = new Float64Array(8);
  stext.walk({
    beginLine: () => v.beginLine(),
    endLine: () => v.endLine(),
    onChar(c, origin, font, size, q) {
      const pointer = font.pointer as unknown as number;
      font.destroy(); // the page's text keeps the font alive
      for (let i = 0; i < 8; i++) quad[i] = q[i]!;
      v.onChar(c, quad, origin[1], size, pointer);
    },
    onImageBlock: (bbox, _transform, image) => v.onImageBlock(bbox as unknown as Bbox, image),
    onVector: (bbox, flags) => v.onVector(bbox as unknown as Bbox, Boolean(flags?.isStroked), Boolean(flags?.isRectangle)),
  });
}
