// The converters (DESIGN.md §9), what this folder offers:
// - types.ts     the seam every converter implements (Converter, ConvertResult, ConvertContext)
// - registry.ts  the converter of an endpoint, sniffing sources against it, running a conversion
// - one module (or folder) per input kind: pdf, image, word, excel, powerpoint, html, url, text,
//   markdown; legacy (LibreOffice) and office (shared OOXML parts); shared/ for what several use
// Converters run inside the worker pool (or in-thread for small renders): they take paths, never
// bytes, and honour their AbortSignal.
// May import: net (the URL converter's SSRF guard) and the bottom (types, config, errors, log).
// Never store, billing or anything above (scripts/layers.mjs).
export type { Converter, ConvertContext, ConvertResult, Peek } from './types.js';
export { converterFor, isRender, KINDS, runConversion, sniff, type RunResult } from './registry.js';
