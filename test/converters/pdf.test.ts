// The PDF converter on real PDFs built by test/fixtures/build/pdf.ts: structure (headings,
// tables, lists, styles, links), page markers, running footers, columns, page ranges, the
// quality routes, figures, OCR of scans, and refusal of bad documents.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp, { type Metadata } from 'sharp';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { pdfConverter } from '../../src/converters/pdf.js';
import { parsePageRanges } from '../../src/converters/shared/page-range.js';
import { terminateOcr } from '../../src/converters/shared/ocr.js';
import type { ConvertOptions } from '../../src/converters/types.js';
import { convertWith, makeCtx } from '../helpers/convert-ctx.js';
import * as build from '../fixtures/build/pdf.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pdf-'));
t.teardown(async () => { await terminateOcr(); rmSync(dir, { recursive: true, force: true }); });

const report = await build.buildReportPdf(dir);
const aligned = await build.buildAlignedTablePdf(dir);
const figure = await build.buildFigurePdf(dir);
const scan = await build.buildScanPdf(dir);
const finePrint = await build.buildFinePrintScanPdf(dir);
const smallPrintFigure = await build.buildSmallPrintFigurePdf(dir);

interface Vector { name: string; file: string; options: Partial<ConvertOptions>; has: (string | RegExp)[]; hasNot: (string | RegExp)[] }

const vectors: Vector[] = [
  {
    name: 'a report keeps its heading levels, table, lists, styles and links, and drops its running footer',
    file: report,
    options: {},
    has: [
      '<!-- page 1 -->\n\n# Quarterly Report\n',
      // the title (only on the first page) is not a level above the sections: they are # too
      '\n# Revenue Overview\n', '\n## Regional Detail\n', '<!-- page 2 -->\n\n# Second Page Topic\n', '<!-- page 3 -->',
      '| Region | Units | Revenue |\n| --- | --- | --- |\n| North | 120 | 4,300 |\n| South | 95 | 3,100 |',
      'explains how the new distribution network changed',
      'Sales were **strong** and costs were *modest*; run `make report` to rebuild it.',
      '[the website](https://example.com/report) for more.',
      '[Jump to page two](#page-2)',
      '- First bullet point\n- Second bullet point',
      '1. Step one\n2. Step two',
    ],
    hasNot: ['ACME Corp Confidential', /^\d+$/m, 'distri-', '#### '],
  },
  {
    name: 'quality fast gives plain paragraphs: no heading, table, list or style markup',
    file: report,
    options: { quality: 'fast' },
    has: ['<!-- page 1 -->\n\nQuarterly Report\n', 'Revenue Overview', 'Sales were strong and costs were modest', 'Region Units Revenue'],
    hasNot: ['# ', '| --- |', '**', '`', '](', '- First bullet point', /^\d+$/m],
  },
  {
    name: 'quality standard finds a table aligned only by whitespace by default (table_mode fast)',
    file: aligned,
    options: {},
    has: ['Stock levels at the end of the month', '| Item | Stock | Price |\n| --- | --- | --- |\n| Bolts | 1200 | 0.10 |\n| Nuts | 800 | 0.05 |\n| Washers | 450 | 0.02 |', 'Prices are per unit.'],
    hasNot: ['Bolts 1200'],
  },
  {
    name: 'table_mode accurate recovers a table aligned only by whitespace',
    file: aligned,
    options: { table_mode: 'accurate' },
    has: ['| Item | Stock | Price |\n| --- | --- | --- |\n| Bolts | 1200 | 0.10 |\n| Nuts | 800 | 0.05 |\n| Washers | 450 | 0.02 |', 'Prices are per unit.'],
    hasNot: [],
  },
  {
    name: 'quality max recovers whitespace-aligned tables without being asked',
    file: aligned,
    options: { quality: 'max' },
    has: ['| Item | Stock | Price |', '| Washers | 450 | 0.02 |'],
    hasNot: [],
  },
  {
    name: 'quality max reads the text inside figures',
    file: figure,
    options: { quality: 'max' },
    has: ['![Figure 1](page-1-figure-1)', /> \*\*Text in figure 1:\*\* GROWTH 2024/],
    hasNot: ['description'],
  },
  {
    name: 'a figure becomes a placeholder with its caption, taken out of the running text',
    file: figure,
    options: {},
    has: [
      'grew during the year.\n\n![Figure 1](page-1-figure-1)\n\n*Figure 1: Growth chart for the year*\n\nAfter the chart',
    ],
    hasNot: ['Text in figure', 'GROWTH', /Growth chart for the year\n[\s\S]*Growth chart for the year/],
  },
  {
    name: 'figures: describe adds a description with the figure size and its text',
    file: figure,
    options: { figures: 'describe' },
    has: ['![Figure 1](page-1-figure-1)', /> \*\*Figure 1 description:\*\* A \d+ × \d+ px raster image, shown at 300 × 80 pt on page 1\. Text in it: “GROWTH 2024”\./],
    hasNot: [],
  },
  {
    // the figure is 640 px tall, its lines 9 px: read as it is, three of its four sentences come out wrong
    name: 'quality max reads small type in a figure after scaling it up by its line height',
    file: smallPrintFigure,
    options: { quality: 'max' },
    has: ['*Figure 1: Terms of the loan*', `> **Text in figure 1:** ${build.FINE_PRINT.join(' ')}\n`],
    hasNot: [],
  },
  {
    name: 'a scanned page with no text layer is OCR’d automatically',
    file: scan,
    options: {},
    has: ['The quick brown fox jumps over the lazy dog.', 'Scanned pages need optical character recognition.'],
    hasNot: [],
  },
  {
    // at the 200 dpi pages are read at, 4.5 pt type is 12 px to the em: most of it misread
    name: 'fine print on a scanned page is rendered larger before OCR and read word for word',
    file: finePrint,
    options: {},
    has: build.FINE_PRINT,
    hasNot: [],
  },
  {
    name: 'quality fast reads only the text layer, so a scan gives an empty page',
    file: scan,
    options: { quality: 'fast' },
    has: [/^<!-- page 1 -->\n$/],
    hasNot: ['quick brown fox'],
  },
  {
    name: 'ocr: true reads a page from its pixels instead of its text layer',
    file: report,
    options: { ocr: true, pages: parsePageRanges('2') },
    has: ['<!-- page 2 -->', 'The second page talks about zebras and their stripes.'],
    hasNot: ['Quarterly Report', 'Two Column Page'],
  },
];

for (const v of vectors) {
  t.test(v.name, async (t) => {
    const res = await convertWith(pdfConverter, v.file, v.options);
    for (const s of v.has) {
      if (typeof s === 'string') t.ok(res.markdown.includes(s), `has ${JSON.stringify(s)}`);
      else t.match(res.markdown, s);
    }
    for (const s of v.hasNot) {
      if (typeof s === 'string') t.notOk(res.markdown.includes(s), `has not ${JSON.stringify(s)}`);
      else t.notMatch(res.markdown, s);
    }
    t.equal(res.mime, 'application/pdf');
  });
}

t.test('a two-column page is read column by column', async (t) => {
  const res = await convertWith(pdfConverter, report, { pages: parsePageRanges('3') });
  const page = res.pages![0]!;
  t.equal(page, `# Two Column Page\n\n${build.REPORT.leftColumn}\n\n${build.REPORT.rightColumn}`);
});

t.test('pages are returned one by one with their markers, and progress is reported', async (t) => {
  const ctx = makeCtx();
  t.teardown(ctx.cleanup);
  const res = await pdfConverter.convert(report, { formats: ['markdown'] }, ctx);
  t.equal(res.pageCount, 3);
  t.equal(res.pages!.length, 3);
  t.match(res.pages![1], /^# Second Page Topic\n\nThe second page talks about zebras/);
  t.notMatch(res.pages![1], /<!-- page/);
  t.same(ctx.progressCalls, [[1, 3], [2, 3], [3, 3]]);
  t.equal(res.variant, 'standard');
});

t.test('a page range converts exactly those pages and count() agrees', async (t) => {
  const res = await convertWith(pdfConverter, report, { pages: parsePageRanges('2,9-') });
  t.equal(res.pageCount, 1);
  t.match(res.markdown, /^<!-- page 2 -->\n\n# Second Page Topic/);
  t.match(res.markdown, /zebras/);
  t.notMatch(res.markdown, /Two Column Page|Quarterly Report|<!-- page [13] -->/);
  t.same(await pdfConverter.count(report, { formats: ['markdown'], pages: parsePageRanges('2,9-') }), { pages: 1, units: 1 });
  t.same(await pdfConverter.count(report, { formats: ['markdown'], pages: parsePageRanges('2-') }), { pages: 2, units: 2 });
  t.same(await pdfConverter.count(report, { formats: ['markdown'] }), { pages: 3, units: 3 });
});

t.test('damaged, encrypted and self-referencing PDFs are refused as invalid_document', async (t) => {
  const bad = {
    corrupt: build.buildCorruptPdf(dir),
    encrypted: await build.buildEncryptedPdf(dir),
    looping: build.buildLoopingPdf(dir),
  };
  for (const [what, file] of Object.entries(bad)) {
    await t.rejects(convertWith(pdfConverter, file), { name: 'ApiError', code: 'invalid_document' }, `${what} PDF is refused by convert`);
  }
  await t.rejects(pdfConverter.count(bad.encrypted, { formats: ['markdown'] }), { code: 'invalid_document', message: /encrypted/ });
  await t.rejects(pdfConverter.count(bad.corrupt, { formats: ['markdown'] }), { code: 'invalid_document' });
});

t.test('an aborted conversion stops with the abort reason, not invalid_document', async (t) => {
  const ac = new AbortController();
  ac.abort(new Error('job cancelled'));
  await t.rejects(convertWith(pdfConverter, report, {}, { signal: ac.signal }), { message: 'job cancelled' });
});

t.test('a 2,000-page PDF converts page by page in bounded memory', async (t) => {
  const many = await build.buildManyPagesPdf(dir, 2000);
  const before = process.memoryUsage().rss;
  let peak = before;
  const res = await convertWith(pdfConverter, many, {}, {
    progress: () => { peak = Math.max(peak, process.memoryUsage().rss); },
  });
  t.equal(res.pageCount, 2000);
  t.equal(res.pages![1999], 'Page 2000 body text about item number 2000.');
  t.ok(peak - before < 256 * 1024 * 1024, `memory grew by ${Math.round((peak - before) / 1048576)} MiB`);
});

t.test('accepts() looks for %PDF- in the first KiB only', async (t) => {
  const peek = (bytes: Buffer) => ({ bytes, name: 'x.pdf' });
  t.ok(pdfConverter.accepts(peek(Buffer.from('%PDF-1.7\n'))));
  t.ok(pdfConverter.accepts(peek(Buffer.concat([Buffer.alloc(500, 0x20), Buffer.from('%PDF-1.4')]))), 'junk before the header is allowed');
  t.notOk(pdfConverter.accepts(peek(Buffer.concat([Buffer.alloc(1100, 0x20), Buffer.from('%PDF-1.4')]))));
  t.notOk(pdfConverter.accepts(peek(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))));
});

t.test('unmapped glyphs of a math font do not make a page a scan; the same glyphs of another font do', async (t) => {
  // TeX's CMEX10 (with and without a subset tag) against a font name that says nothing: the
  // glyphs, their codes and the page are the same. Two words in five of the page are unmapped.
  for (const [font, scanned] of [['CMEX10', false], ['VFUOPR+CMEX10', false], ['GlyphSet', true]] as const) {
    const file = build.buildUnmappedGlyphsPdf(dir, font);
    const out = await convertWith(pdfConverter, file, { quality: 'standard' });
    t.match(out.markdown, 'Delimiters of the extension font', `${font}: the visible words are there`);
    if (scanned) {
      t.notMatch(out.markdown, build.UNMAPPED_INVISIBLE, `${font}: the page was OCR'd (its invisible words are gone)`);
    } else {
      t.match(out.markdown, build.UNMAPPED_INVISIBLE, `${font}: the page was read from its text layer`);
    }
  }
});

t.test('a figure described by a vision model is sent to it as a PNG of the pixels OCR read', async (t) => {
  const bodies: string[] = [];
  const model = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => { body += c; });
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ message: { content: 'A chart titled Growth.' } }] }));
    });
  });
  await new Promise<void>((r) => model.listen(0, '127.0.0.1', r));
  t.teardown(() => { model.closeAllConnections(); model.close(); });
  const ai = { baseUrl: `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`, model: 'test-vision' };
  const sentImage = async (): Promise<Metadata> => {
    const url = (JSON.parse(bodies.at(-1)!) as { messages: Array<{ content: Array<{ image_url?: { url: string } }> }> })
      .messages[0]!.content.find((c) => c.image_url)!.image_url!.url;
    t.match(url, /^data:image\/png;base64,/);
    return sharp(Buffer.from(url.slice(url.indexOf(',') + 1), 'base64')).metadata();
  };

  // a short figure (167 px) is read three times its height, and the model gets that bitmap
  const plain = await convertWith(pdfConverter, figure, { figures: 'describe' });
  const [, w, h] = /A (\d+) × (\d+) px raster image/.exec(plain.markdown)!.map(Number);
  const described = await convertWith(pdfConverter, figure, { figures: 'describe' }, { ai });
  t.match(described.markdown, '> **Figure 1 description:** A chart titled Growth.');
  t.equal(bodies.length, 1);
  const one = await sentImage();
  t.same([one.format, one.width, one.height], ['png', w! * 3, h! * 3], `${w} × ${h} px, sent three times as large`);

  // small type (9 px lines in 640 px) is scaled up by its line height
  const small = await convertWith(pdfConverter, smallPrintFigure, { figures: 'describe' }, { ai });
  t.match(small.markdown, '> **Figure 1 description:** A chart titled Growth.');
  t.equal(bodies.length, 2);
  const two = await sentImage();
  t.equal(two.format, 'png');
  t.ok(two.height! > 640 * 1.5, `scaled up from 640 px (sent ${two.height} px tall)`);
});
