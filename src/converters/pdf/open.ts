// Opening a PDF with mupdf without reading the whole file into memory: mupdf pulls the bytes it
// needs through a Stream backed by a file descriptor. Every failure to open (not a PDF, damaged
// beyond repair, encrypted with a user password, no pages) becomes ApiError('invalid_document').
// Contract: call `close()` on what `openPdf` returns, in a finally block.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import * as mupdf from '../shared/mupdf.js';
import { ApiError } from '../../errors.js';

export interface OpenPdf {
  doc: mupdf.Document;
  pageCount: number;
  close(): void;
}

// mupdf prints warnings about repaired files to the console; a conversion service has no use for them.
mupdf.setLog({ error: () => {}, warning: () => {} });

/** Turns anything mupdf throws into the API's error for a bad document. */
export function asDocumentError(err: unknown, what: string): Error {
  if (err instanceof ApiError) return err;
  if (err instanceof Error && err.name === 'AbortError') return err;
  const msg = err instanceof Error ? err.message : String(err);
  return new ApiError('invalid_document', `${what}: ${msg}`);
}

export function openPdf(file: string): OpenPdf {
  let fd: number | null = openSync(file, 'r');
  const size = fstatSync(fd).size;
  const closeFd = (): void => {
    if (fd !== null) { closeSync(fd); fd = null; }
  };
  const handle = {
    fileSize: () => size,
    read(memory: Uint8Array, offset: number, length: number, position: number): number {
      if (fd === null || position >= size) return 0;
      return readSync(fd, memory, offset, Math.min(length, size - position), position);
    },
    close: closeFd,
  };
  let stream: mupdf.Stream | null = null;
  let doc: mupdf.Document | null = null;
  const close = (): void => {
    try { doc?.destroy(); } catch { /* already gone */ }
    try { stream?.destroy(); } catch { /* already gone */ }
    doc = null;
    stream = null;
    closeFd();
  };
  try {
    stream = new mupdf.Stream(handle);
    const opened = mupdf.Document.openDocument(stream, 'application/pdf');
    doc = opened;
    if (opened.needsPassword()) {
      throw new ApiError('invalid_document', 'The PDF is encrypted and needs a password to open.');
    }
    const pageCount = opened.countPages();
    if (!(pageCount > 0)) throw new ApiError('invalid_document', 'The PDF has no pages.');
    return { doc: opened, pageCount, close };
  } catch (err) {
    close();
    throw asDocumentError(err, 'The PDF could not be opened');
  }
}
