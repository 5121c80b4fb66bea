// Charts (DrawingML c:chart parts, in Word and PowerPoint packages) as what they show: the title,
// then the cached data as a table, a row per category and a column per series. Only the values
// cached in the chart part are read: the embedded workbook is never opened. Parts are read
// inside the package only, never through an external relationship.
import type { ZipArchive } from '../shared/zip-limits.js';
import { gfmTable } from '../shared/gfm-table.js';
import { attr, child, findAll, kids, localName, readTree, pathOf, tagOf, textOf, type Rel, type XNode } from './ooxml.js';
import { escapeMd, plainText } from './pptx-text.js';
import { formatNumber } from './xlsx-book.js';

const MAX_CHART_ROWS = 1000;

export interface ChartData {
  title: string;
  /** The header row (an empty corner, then the series names) and a row per category; empty without data. */
  rows: string[][];
}

/** The cached points of a c:strRef/c:numRef/c:multiLvlStrRef (first level), by index. */
function points(ref: XNode | undefined): string[] {
  const out: string[] = [];
  if (!ref) return out;
  const cache = /^c:(str|num)Lit$/.test(tagOf(ref)) ? ref : findAll(kids(ref), 'c:strCache')[0] ?? findAll(kids(ref), 'c:numCache')[0]
    ?? findAll(kids(ref), 'c:lvl')[0] ?? findAll(kids(ref), 'c:strLit')[0] ?? findAll(kids(ref), 'c:numLit')[0];
  for (const pt of kids(cache).filter((k) => tagOf(k) === 'c:pt')) {
    const i = Number(attr(pt, 'idx'));
    if (!Number.isInteger(i) || i < 0 || i >= MAX_CHART_ROWS) continue;
    const v = textOf(child(pt, 'c:v')).trim();
    out[i] = v !== '' && Number.isFinite(Number(v)) && child(cache, 'c:formatCode') ? formatNumber(Number(v)) : v;
  }
  return out;
}

/** Reads the chart part a relationship points to; undefined for a missing or external target. */
export async function readChart(zip: ZipArchive, rel: Rel | undefined): Promise<ChartData | undefined> {
  if (!rel || rel.external || !zip.has(rel.target)) return undefined;
  const tree = await readTree(zip, rel.target);
  const chart = findAll(tree, 'c:chart')[0];
  const titleNode = child(chart, 'c:title');
  let title = plainText(findAll(kids(pathOf(titleNode, 'c:tx', 'c:rich')), 'a:p')).replace(/\n/g, ' ');
  if (!title && titleNode) title = points(pathOf(titleNode, 'c:tx', 'c:strRef')).join(' ');

  const series = kids(child(chart, 'c:plotArea'))
    .filter((k) => localName(k).endsWith('Chart'))
    .flatMap((plot) => kids(plot).filter((k) => tagOf(k) === 'c:ser'));
  const names = series.map((s, i) => {
    const tx = child(s, 'c:tx');
    return (points(child(tx, 'c:strRef'))[0] ?? textOf(child(tx, 'c:v')).trim()) || `Series ${i + 1}`;
  });
  if (!title && series.length === 1 && attr(child(chart, 'c:autoTitleDeleted'), 'val') !== '1') title = names[0] ?? '';

  const source = (holder: XNode | undefined): XNode | undefined => kids(holder).find((k) => !('#text' in k));
  const cats = points(source(child(series[0], 'c:cat') ?? child(series[0], 'c:xVal')));
  const vals = series.map((s) => points(source(child(s, 'c:val') ?? child(s, 'c:yVal'))));
  let n = cats.length;
  for (const v of vals) n = Math.max(n, v.length);
  const rows: string[][] = [];
  if (series.length > 0 && n > 0) {
    rows.push(['', ...names]);
    for (let i = 0; i < n; i++) rows.push([cats[i] ?? '', ...vals.map((v) => v[i] ?? '')]);
  }
  return { title, rows };
}

/** A chart as Markdown blocks: `**Chart: title**`, then its data as a GFM table when it has data. */
export function chartBlocks(chart: ChartData): string[] {
  const blocks = [chart.title ? `**Chart: ${escapeMd(chart.title)}**` : '**Chart**'];
  if (chart.rows.length > 0) blocks.push(gfmTable(chart.rows));
  return blocks;
}

export async function chartMarkdown(zip: ZipArchive, rel: Rel | undefined): Promise<string[]> {
  const chart = await readChart(zip, rel);
  return chart ? chartBlocks(chart) : [];
}
