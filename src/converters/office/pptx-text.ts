// DrawingML text (a:p paragraphs of a:r runs) as Markdown: bold/italic runs, hyperlinks,
// equations (a14:m) as LaTeX, and bullet levels as nested lists. Whether a paragraph is a bullet
// comes from its own a:pPr or, failing that, from what the caller inherited for the shape
// (placeholder, layout, master).
import { mathMarkdown, tableCellMath } from './omml.js';
import { attr, child, decodeXml, kids, localName, tagOf, type XNode } from './ooxml.js';

export type Bullet = 'none' | 'bullet' | 'number';

export interface TextStyle {
  /** The bullet of a paragraph at this level when the paragraph does not say. */
  bulletAt(level: number): Bullet;
  /** External link targets of the part, by relationship id. */
  links: Map<string, string>;
  /** Leave bold/italic out (headings, table header cells). */
  plain?: boolean;
  /** The text goes into a GFM table cell (equations avoid a backslash before a pipe). */
  inTable?: boolean;
}

/** Escapes what would otherwise turn plain slide text into Markdown syntax. */
export function escapeMd(text: string): string {
  return text
    .replace(/[\\`*_[\]<]/g, '\\$&')
    .replace(/^(\s*)([#>+-]|\d+[.)])(?=\s|$)/gm, (_, sp: string, mark: string) => `${sp}${mark.replace(/^(\d+)?(.)$/, '$1\\$2')}`);
}

interface Run {
  text: string;
  b: boolean;
  i: boolean;
  href?: string;
  /** Markdown already (an equation's LaTeX): not escaped, not merged with its neighbours. */
  raw?: boolean;
}

function runsOf(p: XNode, style: TextStyle, runs: Run[] = []): Run[] {
  for (const k of kids(p)) {
    const name = localName(k);
    if (name === 'br') { runs.push({ text: '\n', b: false, i: false }); continue; }
    if (name === 'm') {
      // a14:m holds an m:oMathPara (its own line) or an m:oMath (inline)
      for (const math of kids(k).filter((n) => /^(oMath|oMathPara)$/.test(localName(n)))) {
        const text = mathMarkdown(math);
        if (text) runs.push({ text: style.inTable ? tableCellMath(text) : text, b: false, i: false, raw: true });
      }
      continue;
    }
    if (name === 'AlternateContent') {
      // Inside a paragraph: the first choice (an equation), else the fallback's runs.
      const choice = kids(k).find((n) => localName(n) === 'Choice') ?? kids(k).find((n) => localName(n) === 'Fallback');
      runsOf(choice ?? {}, style, runs);
      continue;
    }
    if (name !== 'r' && name !== 'fld') continue;
    const t = child(k, 'a:t');
    const text = kids(t).map((n) => ('#text' in n ? String(n['#text']) : '')).join('');
    if (!text) continue;
    const rPr = child(k, 'a:rPr');
    const link = attr(child(rPr, 'a:hlinkClick'), 'r:id');
    const href = link ? style.links.get(link) : undefined;
    runs.push({
      text: decodeText(text),
      b: !style.plain && ['1', 'true'].includes(attr(rPr, 'b') ?? ''),
      i: !style.plain && ['1', 'true'].includes(attr(rPr, 'i') ?? ''),
      href: href && /^(https?:|mailto:)/i.test(href) ? href : undefined,
    });
  }
  return runs;
}

const decodeText = (raw: string): string => decodeXml(raw).replace(/\r\n?|\v/g, '\n');

/** Wraps text in a marker with the marker hugging the text: "** a **" would not render. */
function wrap(text: string, marker: string): string {
  const m = /^(\s*)([\s\S]*?)(\s*)$/.exec(text)!;
  return m[2] ? `${m[1]}${marker}${m[2]}${marker}${m[3]}` : text;
}

/** One paragraph's runs as inline Markdown; adjacent runs of the same look are merged first. */
export function inlineMarkdown(p: XNode, style: TextStyle): string {
  const merged: Run[] = [];
  for (const r of runsOf(p, style)) {
    const last = merged[merged.length - 1];
    if (last && !last.raw && !r.raw && last.b === r.b && last.i === r.i && last.href === r.href) last.text += r.text;
    else merged.push({ ...r });
  }
  return merged
    .map((r) => {
      if (r.raw) return r.text;
      let s = escapeMd(r.text);
      if (r.i) s = wrap(s, '*');
      if (r.b) s = wrap(s, '**');
      if (r.href && s.trim()) s = `[${s.trim()}](${r.href.replace(/[ ()]/g, encodeURIComponent)})`;
      return s;
    })
    .join('')
    .replace(/[ \t]+\n/g, '\n')
    .trim();
}

export function paragraphBullet(p: XNode, style: TextStyle): { level: number; bullet: Bullet } {
  const pPr = child(p, 'a:pPr');
  const level = Math.min(8, Math.max(0, Number(attr(pPr, 'lvl') ?? 0) || 0));
  let bullet = style.bulletAt(level);
  for (const k of kids(pPr)) {
    const name = tagOf(k);
    if (name === 'a:buNone') bullet = 'none';
    else if (name === 'a:buChar' || name === 'a:buBlip') bullet = 'bullet';
    else if (name === 'a:buAutoNum') bullet = 'number';
  }
  return { level, bullet };
}

/** A text body as Markdown blocks: runs of list items as one list, other paragraphs alone. */
export function textBodyMarkdown(paras: XNode[], style: TextStyle): string[] {
  const blocks: string[] = [];
  let list: string[] = [];
  // Open list levels: the indent of their item content and their running number.
  let stack: Array<{ indent: number; n: number; kind: Bullet }> = [];
  const flush = (): void => {
    if (list.length) blocks.push(list.join('\n'));
    list = [];
    stack = [];
  };
  for (const p of paras) {
    const text = inlineMarkdown(p, style);
    if (!text) continue;
    const { level, bullet } = paragraphBullet(p, style);
    if (bullet === 'none') {
      flush();
      blocks.push(text);
      continue;
    }
    // A top-level switch between bullets and numbers starts a separate list.
    if (level === 0 && stack[0] && stack[0].kind !== bullet) flush();
    const depth = Math.min(level, stack.length);
    stack = stack.slice(0, depth + 1);
    const indent = depth === 0 ? 0 : stack[depth - 1]!.indent;
    const at = stack[depth]?.kind === bullet ? stack[depth]! : { indent: 0, n: 0, kind: bullet };
    at.n += 1;
    const marker = bullet === 'number' ? `${at.n}. ` : '- ';
    at.indent = indent + marker.length;
    stack[depth] = at;
    const pad = ' '.repeat(indent);
    list.push(`${pad}${marker}${text.replace(/\n/g, `\n${' '.repeat(at.indent)}`)}`);
  }
  flush();
  return blocks;
}

/** Plain text of paragraphs, one line each (titles, table cells, chart titles). */
export function plainText(paras: XNode[]): string {
  return paras
    .map((p) => runsOf(p, { bulletAt: () => 'none', links: new Map(), plain: true }).map((r) => r.text).join('').trim())
    .filter(Boolean)
    .join('\n');
}
