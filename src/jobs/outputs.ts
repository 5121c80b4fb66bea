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

/** How long a read waits for a committed output's blob to reach its place (see Blobs.whenPlaced). */
export const PLACING_WAIT_MS = 2000;

/** The output rows of a source; outputs too large to keep in their row are staged in pending/. */
export async function outputFiles(ctx: Pick<ConversionContext, 'blobs'>, accountId: string, s: PlannedSource, index: number,
  result: RunResult): Promise<{ files: NewFile[]; staged: Pending[] }> {
  const base = s.name.replace(/\.[A-Za-z0-9]{1,8}$/, '') || 'document';
  const files: NewFile[] = [];
  const staged: Pending[] = [];
  for (let k = 0; k < result.outputs.length; k++) {
    const o = result.outputs[k]!;
    const id = newId('file');
    const bytes = Buffer.byteLength(o.content);
    let blob: string | null = null;
    // Named after the source and the output's place, not the row's id: whichever run of a job
    // records its outcome, the blob has the one name its row gives.
    if (bytes > ROW_CONTENT_BYTES) blob = ctx.blobs.nameFor(accountId, `${s.id}.out${k}`);
    if (blob) {
      try {
        staged.push(await ctx.blobs.stageContent(blob, o.content));
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
 * and small enough to be shown (up to INLINE_CONTENT_BYTES). A blob still waiting to be placed
 * after its commit is waited for a moment, then answered 503 (retry); one that is gone (its
 * conversion deleted meanwhile) is shown without content, as a list shows it.
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
    if (content === null) {
      const where = await blobs.whenPlaced(f.blob, PLACING_WAIT_MS);
      if (where === 'pending') {
        throw new ApiError('service_unavailable', `File ${f.id} is still being stored; retry shortly.`, { 'retry-after': '1' });
      }
      if (where === 'placed') content = await read();
    }
    return { ...f, content };
  }));
}
