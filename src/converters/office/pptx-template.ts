// What a slide's placeholders inherit from its layout and master: where they sit (a slide
// placeholder often has no position of its own) and whether their paragraphs are bullets.
// Layouts and masters are parsed once per presentation and cached on the Templates object.
import type { ZipArchive } from '../shared/zip-limits.js';
import { attr, child, findAll, kids, readTree, pathOf, readRels, tagOf, type XNode } from './ooxml.js';
import type { Bullet } from './pptx-text.js';

export interface Placeholder {
  type: string;
  idx?: string;
}

interface Inherited {
  off?: { x: number; y: number };
  lstStyle?: XNode;
}

interface Template {
  byIdx: Map<string, Inherited>;
  byType: Map<string, Inherited>;
  parent?: Template;
  /** The master's p:txStyles/p:bodyStyle: the bullets of body placeholders. */
  bodyStyle?: XNode;
}

/** Placeholder types whose text is a body (bulleted by default); others are titles, footers... */
const BODY_TYPES = new Set(['body', 'obj']);

export function placeholderOf(nvPr: XNode | undefined): Placeholder | undefined {
  const ph = child(nvPr, 'p:ph');
  if (!ph) return undefined;
  return { type: attr(ph, 'type') ?? 'obj', idx: attr(ph, 'idx') };
}

export function offsetOf(xfrm: XNode | undefined): { x: number; y: number } | undefined {
  const off = child(xfrm, 'a:off');
  if (!off) return undefined;
  return { x: Number(attr(off, 'x') ?? 0), y: Number(attr(off, 'y') ?? 0) };
}

/** The bullet a list-style node (a:lstStyle or p:bodyStyle) gives a level, if it says. */
function bulletIn(styleNode: XNode | undefined, level: number): Bullet | undefined {
  const lvl = child(styleNode, `a:lvl${level + 1}pPr`);
  for (const k of kids(lvl)) {
    const name = tagOf(k);
    if (name === 'a:buNone') return 'none';
    if (name === 'a:buChar' || name === 'a:buBlip') return 'bullet';
    if (name === 'a:buAutoNum') return 'number';
  }
  return undefined;
}

export class Templates {
  private readonly cache = new Map<string, Promise<Template>>();

  constructor(private readonly zip: ZipArchive) {}

  /** The layout a slide uses (its slideLayout relationship), with the layout's master behind it. */
  async forPart(part: string): Promise<Template | undefined> {
    const rels = await readRels(this.zip, part);
    const layout = [...rels.values()].find((r) => r.type.endsWith('/slideLayout') && !r.external && this.zip.has(r.target));
    return layout ? this.load(layout.target, 1) : undefined;
  }

  private load(part: string, depth: number): Promise<Template> {
    let t = this.cache.get(part);
    if (!t) {
      t = this.parse(part, depth);
      this.cache.set(part, t);
    }
    return t;
  }

  private async parse(part: string, depth: number): Promise<Template> {
    const tree = await readTree(this.zip, part);
    const template: Template = { byIdx: new Map(), byType: new Map() };
    for (const sp of findAll(tree, 'p:sp')) {
      const ph = placeholderOf(pathOf(sp, 'p:nvSpPr', 'p:nvPr'));
      if (!ph) continue;
      const info: Inherited = { off: offsetOf(pathOf(sp, 'p:spPr', 'a:xfrm')), lstStyle: pathOf(sp, 'p:txBody', 'a:lstStyle') };
      if (ph.idx !== undefined && !template.byIdx.has(ph.idx)) template.byIdx.set(ph.idx, info);
      if (!template.byType.has(ph.type)) template.byType.set(ph.type, info);
    }
    template.bodyStyle = findAll(tree, 'p:bodyStyle')[0];
    if (depth === 1) {
      const rels = await readRels(this.zip, part);
      const master = [...rels.values()].find((r) => r.type.endsWith('/slideMaster') && !r.external && this.zip.has(r.target));
      if (master) template.parent = await this.load(master.target, 2);
    }
    return template;
  }
}

function chain(template: Template | undefined, ph: Placeholder): Inherited[] {
  const out: Inherited[] = [];
  for (let t = template, first = true; t; t = t.parent, first = false) {
    // Layouts match a slide placeholder by idx; masters by type.
    const hit = (first && ph.idx !== undefined ? t.byIdx.get(ph.idx) : undefined)
      ?? t.byType.get(ph.type)
      ?? (ph.type === 'ctrTitle' ? t.byType.get('title') : undefined)
      ?? (ph.type === 'obj' ? t.byType.get('body') : undefined);
    if (hit) out.push(hit);
  }
  return out;
}

export function inheritedOffset(template: Template | undefined, ph: Placeholder): { x: number; y: number } | undefined {
  return chain(template, ph).find((i) => i.off)?.off;
}

/** The bullet for a level of a shape: its own list style, then layout, master, master body style. */
export function bulletFor(template: Template | undefined, ph: Placeholder | undefined, own: XNode | undefined) {
  return (level: number): Bullet => {
    const fromOwn = bulletIn(own, level);
    if (fromOwn) return fromOwn;
    if (!ph) return 'none';
    for (const i of chain(template, ph)) {
      const b = bulletIn(i.lstStyle, level);
      if (b) return b;
    }
    if (!BODY_TYPES.has(ph.type)) return 'none';
    let master = template;
    while (master?.parent) master = master.parent;
    // Without a master to ask, a body placeholder is most likely bulleted.
    return master?.bodyStyle ? bulletIn(master.bodyStyle, level) ?? 'none' : 'bullet';
  };
}
