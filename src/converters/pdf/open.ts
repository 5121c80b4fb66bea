// Opening a PDF with mupdf: mupdf pulls the bytes it needs through a Stream, served from memory
// for an ordinary file (read once, whole) and from the file descriptor for a very large one, which
// is never held in memory whole. Every failure to open (not a PDF, damaged
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

/**
 * Files up to this size are read once, whole, and mupdf's reads served from memory: it reads in
 * 8 KiB pieces and comes back to the same bytes (the texlive manuals: 2.7 MB read in 337 reads
 * for a 414 KB file). Larger files are read piece by piece from the descriptor.
 */
export const WHOLE_FILE_BYTES = 16 * 1024 * 1024;

/** The bytes of a file as mupdf's Stream asks for them: its size, and reads at a position. */
export interface FileSource {
  fileSize(): number;
  /** Copies up to `length` bytes from `position` into `memory` at `offset`; 0 at the end. */
  read(memory: Uint8Array, offset: number, length: number, position: number): number;
  close(): void;
}

/** A file's bytes: read whole (descriptor closed at once) up to `wholeUpTo` bytes, else read
 *  from its descriptor at each call, until close(). */
export function fileSource(file: string, wholeUpTo = WHOLE_FILE_BYTES): FileSource {
  let fd: number | null = openSync(file, 'r');
  const closeFd = (): void => {
    if (fd !== null) { closeSync(fd); fd = null; }
  };
  let size: number;
  let whole: Buffer | null = null;
  try {
    size = fstatSync(fd).size;
    if (size <= wholeUpTo) {
      whole = Buffer.allocUnsafe(size);
      for (let at = 0; at < size;) {
        const n = readSync(fd, whole, at, size - at, at);
        if (n === 0) { whole = whole.subarray(0, at); break; }
        at += n;
      }
      size = whole.length;
      closeFd();
    }
  } catch (err) {
    closeFd();
    throw err;
  }
  return {
    fileSize: () => size,
    read(memory, offset, length, position) {
      if (position >= size) return 0;
      const n = Math.min(length, size - position);
      if (whole) {
        memory.set(whole.subarray(position, position + n), offset);
        return n;
      }
      return fd === null ? 0 : readSync(fd, memory, offset, n, position);
    },
    close() {
      whole = null;
      closeFd();
    },
  };
}

export function openPdf(file: string, wholeUpTo = WHOLE_FILE_BYTES): OpenPdf {
  const handle = fileSource(file, wholeUpTo);
  let stream: mupdf.Stream | null = null;
  let doc: mupdf.Document | null = null;
  const close = (): void => {
    try { doc?.destroy(); } catch { /* already gone */ }
    try { stream?.destroy(); } catch { /* already gone */ }
    doc = null;
    stream = null;
    handle.close();
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
