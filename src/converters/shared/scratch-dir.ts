// The task's scratch directory (ConvertContext.tmpDir) is made by the first converter that writes
// there. Made for every task up front, it cost a pool thread a mkdir and a rmdir per document for
// the PDFs, Word files and scans that never write a scratch file: 30–60 µs on an idle machine,
// but under scenario B's load (`perf trace`, a KVM guest) 0.17 and 0.95 ms on average, the rmdir
// up to 4.4 ms while the uploads' flushes held the file system's journal.
import { mkdirSync } from 'node:fs';
import type { ConvertContext } from '../types.js';

/** The task's scratch directory, made now if it is not there yet (only its owner can enter it). */
export function scratchDir(ctx: Pick<ConvertContext, 'tmpDir'>): string {
  mkdirSync(ctx.tmpDir, { recursive: true, mode: 0o700 });
  return ctx.tmpDir;
}
