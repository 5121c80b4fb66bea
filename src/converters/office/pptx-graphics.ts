// The non-text content of a slide as Markdown: tables (a:tbl) as GFM tables, charts as their
// title plus the cached data as a table, SmartArt as a list of its node texts, pictures as
// `![alt](image)` placeholders. Parts are only read inside the package, never external targets.
import type { ZipArchive } from '../shared/zip-limits.js';
import { gfmTable } from '../shared/gfm-table.js';
import { attr, child, findAll, kids, localName, readTree, pathOf, tagOf, textOf, type Rel, type XNode } from './ooxml.js';
import { escapeMd, inlineMarkdown, plainText, type TextStyle } from './pptx-text.js';
import { formatNumber } from './xlsx-book.js';

const MAX_CHART_ROWS = 1000;

/** Merged cells: a row-spanned value is repeated down, a column-spanned one left in its first cell. */
export function tableMarkdown(tbl: XNode, style: TextStyle): string | undefined {
  const rows: string[][] = [];
  const above: string[] = [];
  for (const tr of kids(tbl).filter((k) => tagOf(k) === 'a:tr')) {
    const row: string[] = [];
    kids(tr).filter((k) => tagOf(k) === 'a:tc').forEach((tc, j) => {
      let text: string;
      if (attr(tc, 'hMerge') === '1') text = '';
      else if (attr(tc, 'vMerge') === '1') text = above[j] ?? '';
      else {
        const paras = kids(child(tc, 'a:txBody')).filter((k) => tagOf(k) === 'a:p');
        text = paras.map((p) => inlineMarkdown(p, style)).filter(Boolean).join('\n');
      }
      above[j] = text;
      row.push(text);
    });
    if (row.some((c) => c !== '')) rows.push(row);
  }
  return rows.length > 0 ? gfmTable(rows) : undefined;
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

export async function chartMarkdown(zip: ZipArchive, rel: Rel | undefined): Promise<string[]> {
  if (!rel || rel.external || !zip.has(rel.target)) return [];
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
  const n = Math.max(cats.length, ...vals.map((v) => v.length), 0);
  const blocks = [title ? `**Chart: ${escapeMd(title)}**` : '**Chart**'];
  if (series.length > 0 && n > 0) {
    const rows = [['', ...names]];
    for (let i = 0; i < n; i++) rows.push([cats[i] ?? '', ...vals.map((v) => v[i] ?? '')]);
    blocks.push(gfmTable(rows));
  }
  return blocks;
}

/** SmartArt: the text of each node of the diagram's data model, as a flat list. */
export async function diagramMarkdown(zip: ZipArchive, rel: Rel | undefined): Promise<string[]> {
  if (!rel || rel.external || !zip.has(rel.target)) return [];
  const tree = await readTree(zip, rel.target);
  const items = findAll(tree, 'dgm:pt')
    .filter((pt) => (attr(pt, 'type') ?? 'node') === 'node')
    .map((pt) => plainText(findAll(kids(child(pt, 'dgm:t')), 'a:p')).replace(/\n/g, ' '))
    .filter(Boolean)
    .map((t) => `- ${escapeMd(t)}`);
  return items.length > 0 ? [items.join('\n')] : [];
}

export function pictureMarkdown(pic: XNode): string {
  const nv = pathOf(pic, 'p:nvPicPr', 'p:cNvPr');
  const alt = (attr(nv, 'descr') || attr(nv, 'title') || '').replace(/\s+/g, ' ').trim();
  return `![${alt.replace(/[[\]\\]/g, '\\$&')}](image)`;
}
