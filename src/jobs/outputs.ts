// The output rows of a converted source, for a job's outcome and for a render done in its
// request alike: small contents stay in the row, larger ones are staged in pending/ as blobs
// named after the source and the output's place. And the way back: the inline `content` of the
// outputs kept in blobs, for a read of the conversion.
import { readFile } from 'node:fs/promises';
import { ApiError, storageError } from '../errors.js';
import type { RunResult } from '../converters/registry.js';
import type { Blobs, Pending } from '../store/blobs.js';
import { newId } from '../store/ids.js';
import type { FileRow, NewFile } from '../store/conversions.js';
import { INLINE_CONTENT_BYTES, ROW_CONTENT_BYTES, type ConversionContext, type PlannedSource } from './context.js';

const EXT: Record<string, string> = { markdown: '.md', text: '.txt', html: '.html', pages: '.pages.json' };

/** How long a read waits for a committed file's blob to reach its place (see Blobs.whenPlaced). */
const PLACING_WAIT_MS = 2000;

/**
 * Where the blob of a committed file is for a reader (a download, an inline content): in its
 * place, or gone (deleted meanwhile). One still in pending/ after a moment's wait is a 503 to
 * retry: its row committed, the blob is placed right after (or by the pending sweep).
 */
export async function placedForReading(blobs: Blobs, blob: string, fileId: string): Promise<'placed' | 'missing'> {
  const where = await blobs.whenPlaced(blob, PLACING_WAIT_MS);
  if (where === 'pending') throw new ApiError('service_unavailable', `File ${fileId} is still being stored; retry shortly.`, { 'retry-after': '1' });
  return where;
}

/** The pending/ places a pool thread may write a source's outputs to (Task.stage): one per
 *  format asked for, under the names outputFiles gives them. */
export function outputStage(blobs: Blobs, accountId: string, sourceId: string, formats: number): Pending[] {
  return Array.from({ length: formats }, (_, k) => blobs.pendingEntry(outputBlob(blobs, accountId, sourceId, k)));
}

/** The blob name of a source's output `k`: named after the source and the output's place, not the
 *  row's id, so that whichever run of a job records its outcome, the blob has the one name its
 *  row gives. */
function outputBlob(blobs: Blobs, accountId: string, sourceId: string, k: number): string {
  return blobs.nameFor(accountId, `${sourceId}.out${k}`);
}

/** The output rows of a source; outputs too large to keep in their row are staged in pending/
 *  (by a pool thread already, when `stage` holds the places it wrote: RunResult.staged). */
export async function outputFiles(ctx: Pick<ConversionContext, 'blobs'>, accountId: string, s: PlannedSource, index: number,
  result: RunResult, stage: Pending[] = []): Promise<{ files: NewFile[]; staged: Pending[] }> {
  const base = s.name.replace(/\.[A-Za-z0-9]{1,8}$/, '') || 'document';
  const files: NewFile[] = [];
  const staged: Pending[] = [];
  for (let k = 0; k < result.outputs.length; k++) {
    const o = result.outputs[k]!;
    const id = newId('file');
    const bytes = Buffer.byteLength(o.content);
    let blob: string | null = null;
    if (bytes > ROW_CONTENT_BYTES) blob = outputBlob(ctx.blobs, accountId, s.id, k);
    if (blob) {
      try {
        if (result.staged?.includes(k) && stage[k]) {
          // Written by the pool thread: on the disk before its row, as staging does.
          staged.push(stage[k]!);
          await ctx.blobs.flushStaged(stage[k]!);
        } else staged.push(await ctx.blobs.stageContent(blob, o.content));
      } catch (err) {
        await ctx.blobs.discard(staged);
        throw err;
      }
    }
    files.push({
      id, position: index * 8 + 1 + k, role: 'output', sourceId: s.id, name: base + EXT[o.format], mime: o.mime,
      status: 'completed', format: o.format, variant: result.variant, bytes, pages: result.pageCount,
      content: blob ? null : o.content, blob, shown: blob && bytes <= INLINE_CONTENT_BYTES ? o.content : null,
    });
  }
  return { files, staged };
}

/**
 * Fills in the inline `content` of the completed outputs among `files` that are kept in a blob
 * and small enough to be shown (up to INLINE_CONTENT_BYTES); a blob still pending is a 503
 * (placedForReading), one that is gone (its conversion deleted meanwhile) is shown without
 * content, as a list shows it.
 */
export async function withShownContents(blobs: Blobs, files: FileRow[]): Promise<FileRow[]> {
  return Promise.all(files.map(async (f) => {
    if (f.role !== 'output' || f.status !== 'completed' || f.content !== null || !f.blob) return f;
    if (f.bytes === null || Number(f.bytes) > INLINE_CONTENT_BYTES) return f;
    const read = (): Promise<string | null> => readFile(blobs.pathOf(f.blob!), 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw storageError(err, `reading file ${f.id}`);
    });
    let content = await read();
    if (content === null && (await placedForReading(blobs, f.blob, f.id)) === 'placed') content = await read();
    return { ...f, content };
  }));
}
