// D. Word: .docx documents per second through POST /v1/convert/word against
// `pandoc -f docx -t gfm`, one process per core, over the same files (reports made with the docx
// package: a title, then sections of heading, paragraphs, a bulleted list and a table).
import path from 'node:path';
import { pooled, runCommandBaseline, spread } from '../baselines/commands.js';
import { wordFiles } from '../corpus.js';
import { docpipeDocuments } from '../throughput.js';
import { notes, ratioRow, type Scenario } from '../types.js';

export const word: Scenario = {
  id: 'D',
  title: 'word',
  async run(ctx) {
    const S = 'D word';
    const files = await wordFiles(path.join(ctx.dir, 'docx'), ctx.quick ? 3 : 40, ctx.quick ? 2 : 8);
    const minSeconds = ctx.quick ? 0 : 6;
    const runPandoc = () => {
      ctx.log(`D: ${files.length} .docx; pandoc -f docx -t gfm, one process per core`);
      return runCommandBaseline(files, (f) => ['pandoc', ['-f', 'docx', '-t', 'gfm', '-o', '/dev/null', f.path]],
        { minSeconds, unit: () => 1, warmup: !ctx.quick });
    };
    const before = ctx.tools.pandoc ? await runPandoc() : null;
    const api = await docpipeDocuments(ctx, 'D', 'word', files, minSeconds);
    // pandoc again after docpipe (not in --quick), pooled with the first run
    const pandoc = before ? pooled(before, ctx.quick ? null : await runPandoc()) : null;
    const note = notes(api.failures > 0 && `${api.failures} of ${api.documents} documents did not complete; e.g. ${api.samples[0]}`,
      pandoc && spread(pandoc.runs, 'docs/s'));
    return {
      rows: [
        ratioRow(S, 'documents/s vs pandoc', { value: api.rate, unit: 'docs/s' },
          pandoc ? { value: pandoc.rate, unit: 'docs/s', label: `pandoc ×${pandoc.processes}` } : null, 1.5,
          note ?? (pandoc ? undefined : 'pandoc not installed')),
      ],
      raw: { corpus: { files: files.length, bytes: files.reduce((a, f) => a + f.bytes, 0) }, pandoc, docpipe: api },
    };
  },
};
