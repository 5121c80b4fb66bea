// A handle on mupdf's WebAssembly module, for the hot loops that mupdf.js's object API makes
// slow (reading a page's characters: see pdf/stext.ts). mupdf.js keeps its Emscripten module to
// itself, but builds it from `globalThis.$libmupdf_wasm_Module` when that object exists before
// mupdf loads, and Emscripten puts the module's exports (the same C functions mupdf.js calls)
// and its heap views on that very object. This file makes the object; shared/mupdf.ts imports
// it before mupdf, and every file of src/ takes mupdf from there.
// Contract: read `wasm.HEAPF32` afresh after any call into mupdf (a heap that grows gets a new
// view). When mupdf was loaded some other way first, the object stays empty: `ready()` is false
// and callers use mupdf.js's own API.

export interface MupdfWasm {
  HEAPF32: Float32Array;
  _wasm_stext_page_get_first_block(page: number): number;
  _wasm_stext_block_get_next(block: number): number;
  _wasm_stext_block_get_type(block: number): number;
  _wasm_stext_block_get_bbox(block: number): number;
  _wasm_stext_block_get_first_line(block: number): number;
  _wasm_stext_block_get_image(block: number): number;
  _wasm_stext_block_get_v_flags(block: number): number;
  _wasm_stext_line_get_next(line: number): number;
  _wasm_stext_line_get_first_char(line: number): number;
  _wasm_stext_char_get_next(ch: number): number;
  _wasm_stext_char_get_c(ch: number): number;
  _wasm_stext_char_get_origin(ch: number): number;
  _wasm_stext_char_get_quad(ch: number): number;
  _wasm_stext_char_get_size(ch: number): number;
  _wasm_stext_char_get_font(ch: number): number;
}

const holder = globalThis as { $libmupdf_wasm_Module?: Partial<MupdfWasm> };
const wasm: Partial<MupdfWasm> = (holder.$libmupdf_wasm_Module ??= {});

const NEEDED: ReadonlyArray<keyof MupdfWasm> = [
  '_wasm_stext_page_get_first_block', '_wasm_stext_block_get_next', '_wasm_stext_block_get_type', '_wasm_stext_block_get_bbox',
  '_wasm_stext_block_get_first_line', '_wasm_stext_block_get_image', '_wasm_stext_block_get_v_flags', '_wasm_stext_line_get_next',
  '_wasm_stext_line_get_first_char', '_wasm_stext_char_get_next', '_wasm_stext_char_get_c', '_wasm_stext_char_get_origin',
  '_wasm_stext_char_get_quad', '_wasm_stext_char_get_size', '_wasm_stext_char_get_font',
];

/** The module, once mupdf has loaded through shared/mupdf.ts; undefined otherwise. */
export function mupdfWasm(): MupdfWasm | undefined {
  return wasm.HEAPF32 && NEEDED.every((name) => typeof wasm[name] === 'function') ? wasm as MupdfWasm : undefined;
}
