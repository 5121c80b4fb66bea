// G. Memory: one 2,000-page PDF (real LaTeX manuals joined with `mutool merge`, or pdfkit pages
// without mutool) converted at the default quality, submitted async and polled to the end; the
// server's peak RSS (VmHWM, all threads) must stay ≤ 1 GB.
import path from 'node:path';
import { Pool } from 'undici';
import { bigPdf, generatedPdfs } from '../corpus.js';
import { convert, fileBody } from '../client.js';
import { MB, sampleRss, thin } from '../rss.js';
import { atMostRow, type Scenario } from '../types.js';

const LIMIT_MB = 1024;

export const memory: Scenario = {
  id: 'G',
  title: 'memory',
  async run(ctx) {
    const S = 'G memory';
    const pages = ctx.quick ? 30 : 2000;
    const real = !ctx.quick && ctx.tools.mutool && ctx.tools.texdocs;
    const file = await bigPdf(path.join(ctx.dir, 'big'), pages, real);
    ctx.log(`G: one ${file.pages}-page PDF, ${(file.bytes / 1e6).toFixed(1)} MB (${real ? 'texlive manuals joined by mutool' : 'pdfkit'})`);
    const inst = await ctx.bench.start();
    const pool = new Pool(inst.origin, { connections: 2 });
    try {
      // warm-up: a small PDF through the same path, so the threads have loaded mupdf
      const [small] = await generatedPdfs(path.join(ctx.dir, 'big-warmup'), 1, 3);
      await convert(pool, ctx.bench.key, 'pdf', fileBody(small!), { headers: { prefer: 'respond-async' }, pollMs: 100 });
      const rss = sampleRss(inst.pid, 100);
      const t0 = performance.now();
      const o = await convert(pool, ctx.bench.key, 'pdf', fileBody(file),
        { headers: { prefer: 'respond-async' }, pollMs: 500, timeoutMs: 600_000 });
      const seconds = (performance.now() - t0) / 1000;
      const samples = rss.stop();
      const peak = Math.max(inst.peakRss(), ...samples.map((s) => s.rss)) / MB;
      const ok = o.final === 'completed';
      const note = ok
        ? `${o.pages} pages in ${seconds.toFixed(1)} s (${(o.pages / seconds).toFixed(1)} pages/s)`
        : `conversion ended ${o.final || o.status}: ${o.error ?? ''}`;
      const row = atMostRow(S, `${file.pages}-page PDF: peak RSS`, { value: peak, unit: 'MB' }, LIMIT_MB, note);
      if (!ok) row.pass = false;
      return {
        rows: [row],
        raw: { file: { pages: file.pages, bytes: file.bytes, real }, outcome: o, seconds, peak_rss_mb: peak, rss_mb: thin(samples) },
      };
    } finally {
      await pool.close();
      await inst.stop();
    }
  },
};
