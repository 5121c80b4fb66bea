// One slide (or notes page) as Markdown: the title placeholder as a heading, then every shape's
// content in reading order — by position, top to bottom, then left to right within a band —
// with group shapes kept together. Footer, date and slide-number placeholders are left out.
import type { ZipArchive } from '../shared/zip-limits.js';
import { chartMarkdown } from './chart.js';
import { attr, child, kids, localName, readTree, pathOf, readRels, tagOf, type Rel, type XNode } from './ooxml.js';
import { diagramMarkdown, pictureMarkdown, tableMarkdown } from './pptx-graphics.js';
import { bulletFor, inheritedOffset, offsetOf, placeholderOf, type Templates } from './pptx-template.js';
import { inlineMarkdown, textBodyMarkdown } from './pptx-text.js';

/** Shapes whose tops are this close (EMU; a quarter inch) read as one row, left to right. */
const ROW_BAND = 228_600;
const SKIPPED = new Set(['dt', 'ftr', 'sldNum', 'hdr', 'sldImg']);
const TITLES = new Set(['title', 'ctrTitle']);

interface Item {
  x: number;
  y: number;
  blocks: string[];
}

export interface SlideContent {
  title?: string;
  blocks: string[];
  /** The notes slide's part, when the slide has one. */
  notesPart?: string;
}

type Template = Awaited<ReturnType<Templates['forPart']>>;

class SlideReader {
  title?: string;

  constructor(
    private readonly zip: ZipArchive,
    private readonly rels: Map<string, Rel>,
    private readonly template: Template,
    private readonly links: Map<string, string>,
    private readonly notes: boolean,
  ) {}

  async items(nodes: XNode[]): Promise<Item[]> {
    const out: Item[] = [];
    for (const [order, node] of nodes.entries()) {
      const item = await this.item(node, order);
      if (item && item.blocks.length > 0) out.push(item);
    }
    return out;
  }

  private async item(node: XNode, order: number): Promise<Item | undefined> {
    // Shapes with no position anywhere keep their XML order, after the placed ones.
    const at = (off?: { x: number; y: number }) => off ?? { x: order, y: Number.MAX_SAFE_INTEGER };
    switch (tagOf(node)) {
      case 'p:sp': {
        const ph = placeholderOf(pathOf(node, 'p:nvSpPr', 'p:nvPr'));
        if (ph && SKIPPED.has(ph.type)) return undefined;
        const off = offsetOf(pathOf(node, 'p:spPr', 'a:xfrm')) ?? (ph && inheritedOffset(this.template, ph));
        const body = child(node, 'p:txBody');
        const paras = kids(body).filter((k) => tagOf(k) === 'a:p');
        if (ph && TITLES.has(ph.type) && this.title === undefined && !this.notes) {
          // Markdown already (text escaped, equations as LaTeX), one line, no emphasis or links.
          const title = paras.map((p) => inlineMarkdown(p, { bulletAt: () => 'none', links: new Map(), plain: true }))
            .filter(Boolean).join(' ').replace(/\s*\n\s*/g, ' ');
          if (title) {
            this.title = title;
            return undefined;
          }
        }
        // Notes pages are prose: their body placeholder is not bulleted unless a paragraph says so.
        const style = { bulletAt: bulletFor(this.template, this.notes ? undefined : ph, child(body, 'a:lstStyle')), links: this.links };
        return { ...at(off), blocks: textBodyMarkdown(paras, style) };
      }
      case 'p:grpSp': {
        const inner = await this.items(kids(node));
        return { ...at(offsetOf(pathOf(node, 'p:grpSpPr', 'a:xfrm'))), blocks: inReadingOrder(inner) };
      }
      case 'p:graphicFrame': {
        const off = at(offsetOf(child(node, 'p:xfrm')));
        const data = pathOf(node, 'a:graphic', 'a:graphicData');
        const tbl = child(data, 'a:tbl');
        if (tbl) {
          const table = tableMarkdown(tbl, { bulletAt: () => 'none', links: this.links });
          return { ...off, blocks: table ? [table] : [] };
        }
        const chart = child(data, 'c:chart');
        if (chart) return { ...off, blocks: await chartMarkdown(this.zip, this.rels.get(attr(chart, 'r:id') ?? '')) };
        const diagram = child(data, 'dgm:relIds');
        if (diagram) return { ...off, blocks: await diagramMarkdown(this.zip, this.rels.get(attr(diagram, 'r:dm') ?? '')) };
        return undefined;
      }
      case 'p:pic':
        return { ...at(offsetOf(pathOf(node, 'p:spPr', 'a:xfrm'))), blocks: [pictureMarkdown(node)] };
      case 'mc:AlternateContent': {
        // The first choice is the full-fidelity shape; fallbacks repeat it for old readers.
        const choice = kids(node).find((k) => localName(k) === 'Choice') ?? kids(node).find((k) => localName(k) === 'Fallback');
        const inner = await this.items(kids(choice));
        return inner.length > 0 ? { x: inner[0]!.x, y: inner[0]!.y, blocks: inReadingOrder(inner) } : undefined;
      }
      default:
        return undefined;
    }
  }
}

function inReadingOrder(items: Item[]): string[] {
  const sorted = [...items].sort((a, b) => a.y - b.y || a.x - b.x);
  const rows: Item[][] = [];
  for (const it of sorted) {
    const row = rows[rows.length - 1];
    if (row && it.y - row[0]!.y <= ROW_BAND) row.push(it);
    else rows.push([it]);
  }
  return rows.flatMap((row) => row.sort((a, b) => a.x - b.x)).flatMap((it) => it.blocks);
}

/** Reads a slide or notes part. */
export async function readSlide(zip: ZipArchive, part: string, templates: Templates): Promise<SlideContent> {
  const tree = await readTree(zip, part);
  const rels = await readRels(zip, part);
  const links = new Map<string, string>();
  for (const [id, r] of rels) if (r.external && r.type.endsWith('/hyperlink')) links.set(id, r.target);
  const root = tree.find((n) => ['sld', 'notes'].includes(localName(n)));
  const spTree = pathOf(root, 'p:cSld', 'p:spTree');
  const notesPage = localName(root ?? {}) === 'notes';
  const reader = new SlideReader(zip, rels, notesPage ? undefined : await templates.forPart(part), links, notesPage);
  const blocks = inReadingOrder(await reader.items(kids(spTree)));
  const notes = [...rels.values()].find((r) => r.type.endsWith('/notesSlide') && !r.external && zip.has(r.target));
  return { title: reader.title, blocks, notesPart: notes?.target };
}
