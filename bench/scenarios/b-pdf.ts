// B. PDF: pages per second through POST /v1/convert/pdf (quality fast and standard) over a
// corpus of real LaTeX manuals (texlive-latex-base-doc, 8–50 pages each; pdfkit-made reports in
// --quick or without the package), against native `mutool draw -F txt` run one process per
// core over the same files.
import { pooled, runCommandBaseline, spread } from '../baselines/commands.js';
import { generatedPdfs, texlivePdfs, type CorpusFile } from '../corpus.js';
import { apiThroughput } from '../throughput.js';
import { POOL_THREADS } from '../docpipe.js';
import { notes, ratioRow, type Ctx, type Scenario } from '../types.js';
import path from 'node:path';

/** The PDF corpus shared with scenario E. */
export async function pdfCorpus(ctx: Ctx): Promise<{ files: CorpusFile[]; source: string }> {
  if (!ctx.quick && ctx.tools.texdocs) {
    return { files: texlivePdfs(3), source: 'texlive-latex-base-doc manuals (8–50 pages, every 3rd)' };
  }
  const files = await generatedPdfs(path.join(ctx.dir, 'pdf'), ctx.quick ? 2 : 24, ctx.quick ? 3 : 20);
  return { files, source: 'pdfkit-generated reports' };
}

export const pdf: Scenario = {
  id: 'B',
  title: 'pdf',
  async run(ctx) {
    const S = 'B pdf';
    const { files, source } = await pdfCorpus(ctx);
    const pages = files.reduce((a, f) => a + f.pages, 0);
    const minSeconds = ctx.quick ? 0 : 5;
    ctx.log(`B: ${files.length} PDFs, ${pages} pages (${source})`);
    const runMutool = () => {
      ctx.log('B: mutool draw -F txt, one process per core');
      return runCommandBaseline(files, (f) => ['mutool', ['draw', '-q', '-F', 'txt', '-o', '/dev/null', f.path]],
        { minSeconds, unit: (f) => f.pages, warmup: !ctx.quick });
    };
    const before = ctx.tools.mutool ? await runMutool() : null;
    const inst = await ctx.bench.start();
    const api: Record<string, Awaited<ReturnType<typeof apiThroughput>>> = {};
    try {
      for (const quality of ['fast', 'standard']) {
        ctx.log(`B: docpipe quality ${quality}`);
        api[quality] = await apiThroughput(inst.origin, ctx.bench.key, 'pdf', files, {
          fields: { quality }, concurrency: POOL_THREADS * 2, minSeconds, unit: (f) => f.pages, warmup: ctx.quick ? 0 : 2,
        });
      }
    } finally {
      await inst.stop();
    }
    // the baseline again after docpipe (not in --quick), pooled with the first run
    const mutool = before ? pooled(before, ctx.quick ? null : await runMutool()) : null;
    const base = mutool ? { value: mutool.rate, unit: 'pages/s', label: 'mutool ×' + mutool.processes } : null;
    const note = (q: string) => {
      const a = api[q]!;
      return notes(a.failures > 0 && `${a.failures} of ${a.documents} documents did not complete; e.g. ${a.samples[0]}`,
        mutool && spread(mutool.runs, 'pages/s'));
    };
    return {
      rows: [
        ratioRow(S, 'pages/s, quality fast', { value: api.fast!.rate, unit: 'pages/s' }, base, 0.6, note('fast')),
        ratioRow(S, 'pages/s, quality standard', { value: api.standard!.rate, unit: 'pages/s' }, base, 0.3, note('standard')),
      ],
      raw: { corpus: { source, files: files.length, pages }, mutool, docpipe: api },
    };
  },
};
