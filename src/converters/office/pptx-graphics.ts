// The non-text content of a slide as Markdown: tables (a:tbl) as GFM tables, SmartArt as a list
// of its node texts, pictures as `![alt](image)` placeholders (charts: chart.ts). Parts are only
// read inside the package, never external targets.
import type { ZipArchive } from '../shared/zip-limits.js';
import { escapeMarkdownCell, gfmTable } from '../shared/gfm-table.js';
import { attr, child, findAll, kids, readTree, pathOf, tagOf, type Rel, type XNode } from './ooxml.js';
import { escapeMd, inlineMarkdown, plainText, type TextStyle } from './pptx-text.js';

/** Merged cells: a row-spanned value is repeated down, a column-spanned one left in its first cell.
 *  Cells are inline Markdown (escaped text, equations as LaTeX): only their pipes are escaped. */
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
        text = paras.map((p) => inlineMarkdown(p, { ...style, inTable: true })).filter(Boolean).join('\n');
      }
      above[j] = text;
      row.push(text);
    });
    if (row.some((c) => c !== '')) rows.push(row);
  }
  return rows.length > 0 ? gfmTable(rows, escapeMarkdownCell) : undefined;
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
