// mupdf for the converters: the library itself, loaded after shared/mupdf-module.ts has made the
// object mupdf.js builds its WebAssembly module on (see there). Every file of src/ imports mupdf
// from here, never from 'mupdf' directly: the first load decides whether the handle works.
import './mupdf-module.js';

export * from 'mupdf';
