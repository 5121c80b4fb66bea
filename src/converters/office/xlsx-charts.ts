// The charts of a chart sheet: the sheet's drawing part points at one or more chart parts,
// each given as the PowerPoint converter gives a chart (its title, then its cached data as a
// table; see chart.ts).
import type { ZipArchive } from '../shared/zip-limits.js';
import { attr, findAll, readRels, readTree } from './ooxml.js';
import { chartMarkdown } from './chart.js';

export async function chartSheetMarkdown(zip: ZipArchive, part: string): Promise<string[]> {
  const blocks: string[] = [];
  const rels = await readRels(zip, part);
  for (const drawing of findAll(await readTree(zip, part), 'drawing')) {
    const rel = rels.get(attr(drawing, 'r:id') ?? '');
    if (!rel || rel.external || !zip.has(rel.target)) continue;
    const drawingRels = await readRels(zip, rel.target);
    for (const chart of findAll(await readTree(zip, rel.target), 'chart')) {
      blocks.push(...(await chartMarkdown(zip, drawingRels.get(attr(chart, 'r:id') ?? ''))));
    }
  }
  return blocks;
}
