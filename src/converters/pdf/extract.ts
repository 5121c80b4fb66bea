// One PDF page as plain data: text fragments (runs of characters on one baseline with their
// font size, bold/italic/monospace flags and link), image boxes, vector boxes (for ruled
// tables) and link targets, read from mupdf's structured text. Everything later in the
// pipeline (statistics, tables, columns, Markdown) works on this model, never on mupdf objects.
// Contract: call `destroy()` on the model when the page is done (it may hold mupdf Images).
import * as mupdf from '../shared/mupdf.js';
import { type Bbox, type StextVisitor, walkStext } from './stext.js';
import { type Box, BOLD, isInk, ITALIC, MONO, type PChar, type Frag, isMarkerText, MATH, SYMBOL } from './model.js';

export interface ImageBox extends Box { image: mupdf.Image | null }
export interface VecBox extends Box { stroked: boolean; rect: boolean }

export interface PageModel {
  /** 1-based page number. */
  number: number;
  width: number;
  height: number;
  frags: Frag[];
  images: ImageBox[];
  vectors: VecBox[];
  /** Link targets; PChar.link indexes into this. */
  links: string[];
  /** Non-space characters, and of those the ones that decode to nothing usable. */
  inkChars: number;
  badChars: number;
  destroy(): void;
}

export interface ExtractOptions {
  /** Keep the mupdf Image of each image block (to render or OCR figures). */
  keepImages?: boolean;
  /** Collect vector boxes (needed for ruled tables). */
  vectors?: boolean;
  /** Resolve link annotations. */
  links?: boolean;
}

/** TeX's math fonts (extension, symbols, math italic, the AMS and other symbol sets) and the
 *  OpenType math fonts (Cambria Math, STIX Two Math, Latin Modern Math…), with or without a
 *  subset tag. Many of their glyphs (big delimiters, radicals, arrows) have no Unicode mapping. */
const MATH_FONT = /^(?:[A-Z]{6}\+)?(?:cmex|cmsy|cmbsy|cmmi|msam|msbm|lasy|wasy|stmary|esint|rsfs|eufm|eusm)|math/i;

function styleOfFont(font: mupdf.Font): number {
  const name = font.getName();
  let style = 0;
  if (font.isBold() || /bold|black|heavy|semibold|demi/i.test(name)) style |= BOLD;
  if (font.isItalic() || /italic|oblique|slanted/i.test(name)) style |= ITALIC;
  if (font.isMono() || /courier|mono|nimbusmon|cmtt|consol|menlo|typewriter|code|fixed/i.test(name)) style |= MONO;
  if (/symbol|wingding|dingbat|webding/i.test(name)) style |= SYMBOL;
  if (MATH_FONT.test(name)) style |= MATH;
  return style;
}

/** Bullet glyphs of the Symbol and Wingdings fonts as they arrive with no Unicode mapping
 *  (private use U+F0xx) or as U+FFFD. */
const PUA_BULLETS = new Set(['\uf0b7', '\uf0a7', '\uf0d8', '\uf0fc', '\uf076', '\uf06c', '\uf06e', '\uf0a8', '\uf0e0', '\uf0d7', '\uf09f']);

/** The text of a glyph of a symbol font: its private-use or unknown codes become a bullet. */
function symbolText(c: string, style: number): string {
  // every code below is in U+F000–U+F0FF or is U+FFFD
  const code = c.charCodeAt(0);
  if (code < 0xf000 || (code > 0xf0ff && code !== 0xfffd)) return c;
  if (PUA_BULLETS.has(c)) return '•';
  if ((style & SYMBOL) !== 0 && (c === '\ufffd' || (c >= '\uf000' && c <= '\uf0ff'))) return '•';
  return c;
}

function isBad(c: string): boolean {
  const code = c.charCodeAt(0);
  return code === 0xfffd || (code >= 0xe000 && code <= 0xf8ff) || (code < 0x20 && code !== 0x09);
}

interface LinkArea { box: Box; index: number; uri: string }

function linkAreas(page: mupdf.Page, doc: mupdf.Document): LinkArea[] {
  const out: LinkArea[] = [];
  for (const link of page.getLinks()) {
    try {
      const [x0, y0, x1, y1] = link.getBounds();
      let uri = link.getURI();
      if (!link.isExternal()) {
        const target = doc.resolveLink(link);
        uri = target >= 0 ? `#page-${target + 1}` : '';
      }
      if (uri && !/^\s*javascript:/i.test(uri)) out.push({ box: { x0, y0, x1, y1 }, index: out.length, uri });
    } finally {
      link.destroy();
    }
  }
  return out;
}

/** Height of the horizontal bands a page's links are filed in, in points. */
const LINK_BAND = 8;
/** Bands one link is filed in at most: past any real page's height (80,000 pt), so that a
 *  link box of absurd size costs a bounded loop. */
const MAX_LINK_BANDS = 10_000;

/**
 * The link areas filed by the bands of the page they reach into, each band's in link order: a
 * character looks only at the links of its own band (a contents page has hundreds of links
 * and thousands of characters), and takes the first that holds it, as a scan of all would.
 */
function bandsOf(links: readonly LinkArea[]): Map<number, LinkArea[]> {
  const bands = new Map<number, LinkArea[]>();
  for (const l of links) {
    if (!(l.box.y1 >= l.box.y0)) continue;
    const last = Math.min(Math.floor(l.box.y1 / LINK_BAND), Math.floor(l.box.y0 / LINK_BAND) + MAX_LINK_BANDS);
    for (let b = Math.floor(l.box.y0 / LINK_BAND); b <= last; b++) {
      let band = bands.get(b);
      if (!band) bands.set(b, (band = []));
      band.push(l);
    }
  }
  return bands;
}

/**
 * The visitor of one page's walk (stext.ts), gathering its fragments, images and vectors. A
 * class, not an object of closures made per page: V8 keeps the optimised code of a closure only
 * while one lives, so per-page closures were compiled again after every full collection (and
 * onChar is the hottest function of a conversion).
 */
class PageReader implements StextVisitor {
  private readonly fontStyles = new Map<number, number>();
  readonly frags: Frag[] = [];
  readonly images: ImageBox[] = [];
  readonly vectors: VecBox[] = [];
  inkChars = 0;
  badChars = 0;
  private cur: PChar[] = [];
  private lastInk: PChar | null = null;

  constructor(
    private readonly bx0: number, private readonly by0: number,
    private readonly linkBands: Map<number, LinkArea[]> | null, private readonly keepImages: boolean,
  ) {}

  private push(): void {
    const cur = this.cur;
    while (cur.length > 0 && cur[cur.length - 1]!.c.trim() === '') cur.pop();
    if (cur.length > 0) this.frags.push(makeFrag(cur));
    this.cur = [];
    this.lastInk = null;
  }

  beginLine(): void { this.push(); }
  endLine(): void { this.push(); }

  onChar(c: string, quad: Float64Array, baseline: number, size: number, font: number): void {
    let style = this.fontStyles.get(font);
    if (style === undefined) {
      const f = new mupdf.Font(font as unknown as mupdf.Font['pointer']);
      try { style = styleOfFont(f); } finally { f.destroy(); }
      this.fontStyles.set(font, style);
    }
    const x0 = Math.min(quad[0]!, quad[4]!) - this.bx0;
    const x1 = Math.max(quad[2]!, quad[6]!) - this.bx0;
    c = symbolText(c, style);
    const ch: PChar = { c, x0, x1, base: baseline - this.by0, size, style: style & ~(SYMBOL | MATH), link: -1 };
    const lastInk = this.lastInk;
    if (isInk(c)) {
      this.inkChars++;
      // an unmapped glyph of a symbol or math font does not make the text layer garbage: OCR
      // reads letters, not delimiters and radicals (a page of formulas or a font's glyph table
      // came out of OCR as noise where the text layer had its words)
      if (isBad(c) && (style & (SYMBOL | MATH)) === 0) this.badChars++;
      if (lastInk && x0 - lastInk.x1 > Math.max(size, 4) && !isMarkerText(this.cur)) this.push();
      // right-to-left text comes in logical order, right to left on the page: a character
      // well left of the one before it with no space between starts a new word (a number
      // or a Latin word set inside Arabic or Hebrew text)
      else if (lastInk && lastInk.x0 - x1 > size * 0.2 && this.cur[this.cur.length - 1]?.c !== ' ') this.cur.push({ ...ch, c: ' ', x1: ch.x0 });
      this.lastInk = ch;
    } else if (this.cur.length === 0) {
      return;
    }
    if (this.linkBands) {
      const cx = (quad[0]! + quad[2]!) / 2;
      const cy = (quad[1]! + quad[5]!) / 2;
      for (const l of this.linkBands.get(Math.floor(cy / LINK_BAND)) ?? []) {
        if (cx >= l.box.x0 && cx <= l.box.x1 && cy >= l.box.y0 && cy <= l.box.y1) { ch.link = l.index; break; }
      }
    }
    this.cur.push(ch);
  }

  onImageBlock(bbox: Bbox, image: mupdf.Image): void {
    const box = { x0: bbox[0] - this.bx0, y0: bbox[1] - this.by0, x1: bbox[2] - this.bx0, y1: bbox[3] - this.by0 };
    if (this.keepImages) this.images.push({ ...box, image });
    else { image.destroy(); this.images.push({ ...box, image: null }); }
  }

  onVector(bbox: Bbox, stroked: boolean, rect: boolean): void {
    this.vectors.push({ x0: bbox[0] - this.bx0, y0: bbox[1] - this.by0, x1: bbox[2] - this.bx0, y1: bbox[3] - this.by0, stroked, rect });
  }
}

/** Reads one loaded page into a PageModel. Splits a mupdf line where a gap is wider than an em. */
export function extractPage(page: mupdf.Page, doc: mupdf.Document, number: number, opts: ExtractOptions = {}): PageModel {
  const [bx0, by0, bx1, by1] = page.getBounds();
  const links = opts.links ? linkAreas(page, doc) : [];
  const reader = new PageReader(bx0, by0, links.length > 0 ? bandsOf(links) : null, opts.keepImages === true);
  const options = ['preserve-images', opts.vectors ? 'vectors' : ''].filter(Boolean).join(',');
  const stext = page.toStructuredText(options);
  try {
    walkStext(stext, reader);
  } finally {
    stext.destroy();
  }
  const { frags, images, vectors, inkChars, badChars } = reader;
  return {
    number, width: bx1 - bx0, height: by1 - by0, frags, images, vectors, links: links.map((l) => l.uri), inkChars, badChars,
    destroy() {
      for (const im of images) { im.image?.destroy(); im.image = null; }
    },
  };
}

export function makeFrag(chars: PChar[]): Frag {
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  // how many non-blank characters have each size, in the order sizes first appear: most
  // fragments have one size, counted without a map
  let oneSize = 0;
  let oneCount = 0;
  let sizes: Map<number, number> | null = null;
  for (const ch of chars) {
    x0 = Math.min(x0, ch.x0);
    x1 = Math.max(x1, ch.x1);
    y0 = Math.min(y0, ch.base - ch.size * 0.8);
    y1 = Math.max(y1, ch.base + ch.size * 0.2);
    if (!isInk(ch.c)) continue;
    if (sizes) sizes.set(ch.size, (sizes.get(ch.size) ?? 0) + 1);
    else if (oneCount === 0 || ch.size === oneSize) { oneSize = ch.size; oneCount++; }
    else sizes = new Map([[oneSize, oneCount], [ch.size, 1]]);
  }
  // the size most of them have; of equal counts, the larger
  let size = chars[0]!.size;
  if (sizes) {
    let best = -1;
    for (const [s, n] of sizes) if (n > best || (n === best && s > size)) { best = n; size = s; }
  } else if (oneCount > 0) {
    size = oneSize;
  }
  let base = chars[0]!.base;
  for (const c of chars) if (c.size === size) { base = c.base; break; }
  return { chars, x0, x1, y0, y1, size, base };
}
