// The output rows of a converted source, for a job's outcome and for a render done in its
// request alike: small contents stay in the row, larger ones are staged in pending/ as blobs
// named after the source and the output's place.
import type { RunResult } from '../converters/registry.js';
import type { Pending } from '../store/blobs.js';
import { newId } from '../store/ids.js';
import type { NewFile } from '../store/conversions.js';
import { INLINE_CONTENT_BYTES, type ConversionContext, type PlannedSource } from './context.js';

const EXT: Record<string, string> = { markdown: '.md', text: '.txt', html: '.html', pages: '.pages.json' };

/** The output rows of a source; outputs too large to keep inline are staged in pending/. */
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
    if (bytes > INLINE_CONTENT_BYTES) blob = ctx.blobs.nameFor(accountId, `${s.id}.out${k}`);
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
      content: blob ? null : o.content, blob,
    });
  }
  return { files, staged };
}
