import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { powerpointConverter } from '../../src/converters/powerpoint.js';
import type { Peek } from '../../src/converters/types.js';
import { convertWith, makeCtx, peekOf } from '../helpers/convert-ctx.js';
import { buildReport } from '../fixtures/build/docx.js';
import { buildCraftedDeck, buildDeck, buildMathDeck } from '../fixtures/build/pptx.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pptx-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));


/** The first of these strings that does not come after the one before it; null when all do. */
function firstOutOfOrder(md: string, parts: string[]): string | null {
  let at = -1;
  for (const p of parts) {
    const i = md.indexOf(p, at + 1);
    if (i <= at) return p;
    at = i;
  }
  return null;
}

interface Vector {
  name: string;
  build: () => Promise<string>;
  must: string[];
  mustNot: string[];
  order?: string[];
}

const vectors: Vector[] = [
  {
    name: 'a deck keeps slide markers, titles, nested bullets, tables, charts, pictures, links and notes',
    build: () => buildDeck(dir),
    must: [
      '<!-- Slide 1 -->\n\n## Quarterly review\n\n',
      '- Revenue grew\n  - Mostly in the north\n    - Deepest point\n- **Costs fell**',
      '### Notes:\n\nSay hello to the board.\nMention the weather.',
      '<!-- Slide 2 -->\n\n## Numbers\n\n| City | Sales |\n| --- | --- |\n| Oslo \\| Norway | 12 |\n| Bergen | 7 |',
      '![A tiny logo](image)',
      '**Chart: Sales by quarter**\n\n|  | Sales |\n| --- | --- |\n| Q1 | 3 |\n| Q2 | 5 |',
      '[Visit our site](https://example.com/deck)',
    ],
    mustNot: ['undefined', '[object Object]', 'NaN', 'Slide Number', '<a:', '&amp;', '**Quarterly'],
    // The footer box was added to the slide second but sits lowest; the two columns share a row.
    order: ['## Quarterly review', 'Left column', 'Right column', '- Revenue grew', 'Footer note at the bottom', '### Notes:', '<!-- Slide 2 -->', '<!-- Slide 3 -->'],
  },
  {
    name: 'a hand-written slide inherits placeholder position and bullets and reads groups, merges and SmartArt',
    build: () => buildCraftedDeck(dir),
    must: [
      // presentation.xml lists the slides as 1, 3, 2: the markers follow that order
      '<!-- Slide 2 -->\n\n## Pictures and charts',
      '<!-- Slide 3 -->\n\n## R&D plans\n\nTop banner\n\n',
      '| Head A | Head B | Head C |\n| --- | --- | --- |\n| Wide |  | Tall |\n| x | y \\| z | Tall |\n\n',
      '- Alpha\n  - Beta\n\n1. First numbered\n2. Second numbered\n\nPlain paragraph\n\n- line one\n  line two\n- Mixed **bold** and *italic* \\*stars\\*',
      'Group left\n\nGroup right',
      'Choice text',
      '![](image)',
      '- Plan\n- Build',
      '### Notes:\n\nSpeak about \\[budget\\] & risks.\n\nThen take questions.',
    ],
    mustNot: ['Fallback text', 'Confidential footer', 'ignored doc', '|  |  |  |', '**bold **', '\n\n\n'],
    order: ['## R&D plans', 'Top banner', '| Head A', '- Alpha', 'Group left', 'Group right', 'Choice text', '![](image)', '- Plan', '### Notes:'],
  },
];

for (const v of vectors) {
  t.test(v.name, async (t) => {
    const file = await v.build();
    const { markdown, pages, pageCount } = await convertWith(powerpointConverter, file);
    for (const s of v.must) t.ok(markdown.includes(s), `has ${JSON.stringify(s)}`);
    for (const s of v.mustNot) t.notOk(markdown.includes(s), `lacks ${JSON.stringify(s)}`);
    if (v.order) t.equal(firstOutOfOrder(markdown, v.order), null, 'shapes in reading order');
    t.notMatch(markdown, /\n{3,}|[ \t]+\n|\*\*\s+\*\*/, 'no stray blank lines or trailing spaces');
    t.equal(pageCount, 3);
    t.equal(pages?.length, 3);
    t.ok(pages?.every((p, i) => p.startsWith(`<!-- Slide ${i + 1} -->`)), 'one page per slide, in order');
    t.equal(`${pages?.join('\n\n')}\n`, markdown, 'the pages make up the document');
  });
}

t.test('equations in a slide become LaTeX: a display one on its own line, an inline one in its sentence, one in a table cell, one in a title', async (t) => {
  const { pages } = await convertWith(powerpointConverter, await buildMathDeck(dir));
  const slide = pages![0]!;
  t.ok(slide.includes('Footer note at the bottom\n\n$$x=\\frac{-b\\pm\\sqrt{\\Delta}}{2a}$$\n\nHere $e^{i\\pi}=-1$ holds.\n\n'), slide);
  // in a table cell: escaped once, and no backslash right before a pipe
  t.ok(slide.includes('| Name | Value |\n| --- | --- |\n| Norm | $\\left\\Vert v \\right\\Vert$ |\n| Stars | \\*a\\|b\\* |\n\n### Notes:'), slide);
  t.notOk(slide.includes('Equation picture'), 'the fallback picture is not used');
  t.ok(pages![1]!.startsWith('<!-- Slide 2 -->\n\n## Numbers for $x_{1}$\n\n'), pages![1]!.slice(0, 60));
});

t.test('count reads the slide list only, and progress is reported per slide', async (t) => {
  const file = await buildDeck(dir, 'count.pptx');
  t.same(await powerpointConverter.count(file, { formats: ['markdown'] }), { pages: 3, units: 3 });
  const ctx = makeCtx();
  await powerpointConverter.convert(file, { formats: ['markdown'] }, ctx);
  ctx.cleanup();
  t.same(ctx.progressCalls, [[1, 3], [2, 3], [3, 3]]);
});

t.test('accepts() knows a pptx by its zip bytes with its name or type, and refuses PDFs', async (t) => {
  const file = await buildDeck(dir, 'peek.pptx');
  t.ok(powerpointConverter.accepts(peekOf(file)));
  t.ok(powerpointConverter.accepts(peekOf(file, 'blob', 'application/vnd.openxmlformats-officedocument.presentationml.presentation')));
  const pdf = path.join(dir, 'fake.pptx');
  writeFileSync(pdf, '%PDF-1.4\n1 0 obj\n<<>>\nendobj\n');
  t.notOk(powerpointConverter.accepts(peekOf(pdf)), 'a PDF named .pptx');
});

t.test('a Word document sent as PowerPoint is an input_format_mismatch', async (t) => {
  const docx = await buildReport(dir, 'not-a-deck.docx');
  await t.rejects(convertWith(powerpointConverter, docx), { code: 'input_format_mismatch', message: /Word document, not a PowerPoint document/ });
  await t.rejects(powerpointConverter.count(docx, { formats: ['markdown'] }), { code: 'input_format_mismatch' });
});

t.test('a cancelled conversion stops between slides', async (t) => {
  const file = await buildDeck(dir, 'abort.pptx');
  const ac = new AbortController();
  let seen = 0;
  const run = convertWith(powerpointConverter, file, {}, {
    signal: ac.signal,
    // The first slide's progress cancels the job: no further slide is read.
    progress: (done) => { seen = done; ac.abort(new Error('cancelled after slide 1')); },
  });
  await t.rejects(run, { message: 'cancelled after slide 1' });
  t.equal(seen, 1);
});
