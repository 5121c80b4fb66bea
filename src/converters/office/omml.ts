// Office Math (OMML: m:oMath, m:oMathPara) as LaTeX, for the Word and PowerPoint converters:
// fractions, sub/superscripts, radicals, n-ary operators with limits, delimiters, matrices,
// equation arrays, accents, bars, group characters, limits and functions. Elements are matched
// by local name, so the namespace prefix does not matter. An element this file does not know,
// or math nested deeper than MAX_DEPTH, becomes its plain text: equation text never disappears.
// The work is one walk of the tree (each element visited once).
import { decodeXml, kids, localName, type XNode } from './ooxml.js';
import { accentCommand, cat, delimiter, FUNCTIONS, LIMIT_FUNCTIONS, mathText, textModeText } from './omml-symbols.js';

const MAX_DEPTH = 64;

interface Ctx {
  /** Inside an equation array: `&` marks an alignment point. */
  amp: boolean;
  /** Inside a function name: words are operator names (\sin, \operatorname{sgn}). */
  fname: boolean;
}

const isText = (n: XNode): boolean => '#text' in n;
const elems = (n: XNode | undefined): XNode[] => kids(n).filter((k) => !isText(k));
const part = (n: XNode | undefined, name: string): XNode | undefined => elems(n).find((k) => localName(k) === name);
const all = (n: XNode | undefined, name: string): XNode[] => elems(n).filter((k) => localName(k) === name);

/** The m:val of a property element, whatever its prefix. */
function val(node: XNode | undefined): string | undefined {
  const a = node?.[':@'] as Record<string, string> | undefined;
  if (!a) return undefined;
  for (const k of Object.keys(a)) if (k === 'val' || k.endsWith(':val')) return decodeXml(a[k]!);
  return undefined;
}

const prop = (pr: XNode | undefined, name: string): string | undefined => val(part(pr, name));

/** An on/off property: present without a value, or with 1/on/true, is on. */
function flag(pr: XNode | undefined, name: string): boolean {
  const el = part(pr, name);
  if (!el) return false;
  const v = val(el);
  return v === undefined || ['1', 'on', 'true'].includes(v);
}

/** The text of the t elements under a node, in order (an explicit stack: no recursion). */
function plainOf(node: XNode): string {
  let out = '';
  const stack: Array<{ n: XNode; inT: boolean }> = [{ n: node, inT: false }];
  while (stack.length > 0) {
    const { n, inT } = stack.pop()!;
    if (isText(n)) {
      if (inT) out += decodeXml(String(n['#text']));
      continue;
    }
    const inside = inT || localName(n) === 't';
    const ks = kids(n);
    for (let i = ks.length - 1; i >= 0; i--) stack.push({ n: ks[i]!, inT: inside });
  }
  return out;
}

const plain = (n: XNode, ctx: Ctx): string => mathText(plainOf(n), ctx.amp);

/** Bases that need no braces before ^ or _: a word, a number, one command, one \left…\right group. */
function bare(s: string): boolean {
  if (/^(?:[A-Za-z0-9.]+|\\[A-Za-z]+|[^\s\\{}^_&])$/u.test(s)) return true;
  return s.startsWith('\\left') && s.indexOf('\\left', 1) < 0 && /\\right(?:\\?[^A-Za-z\s]|\\[A-Za-z]+)$/.test(s);
}
const base = (s: string): string => (s === '' ? '{}' : bare(s) ? s : `{${s}}`);
/** One character or one command: what a narrow accent fits over. */
const single = (s: string): boolean => /^(?:[^\s\\{}^_&]|\\[A-Za-z]+)$/u.test(s);

const MATRIX_ENV: Record<string, string> = { '()': 'pmatrix', '[]': 'bmatrix', '{}': 'Bmatrix', '||': 'vmatrix', '‖‖': 'Vmatrix' };

const SCRIPT_STYLES: Record<string, string> = {
  'double-struck': 'mathbb', fraktur: 'mathfrak', script: 'mathcal', 'sans-serif': 'mathsf', monospace: 'mathtt',
};

function seq(nodes: XNode[], ctx: Ctx, depth: number): string {
  let out = '';
  for (const n of nodes) if (!isText(n)) out = cat(out, convert(n, ctx, depth));
  return out;
}

/** The content of a node's child element (m:e, m:num, m:sub…). */
const arg = (n: XNode, name: string, ctx: Ctx, depth: number): string => seq(kids(part(n, name)), ctx, depth + 1);

function run(r: XNode, ctx: Ctx): string {
  const text = all(r, 't').map(plainOf).join('');
  if (text === '') return '';
  // m:rPr (math style) sits beside w:rPr or a:rPr (font): read whichever holds math properties.
  const props = all(r, 'rPr');
  const has = (name: string): boolean => props.some((p) => flag(p, name));
  const sty = props.map((p) => prop(p, 'sty')).find((v) => v !== undefined);
  const scr = props.map((p) => prop(p, 'scr')).find((v) => v !== undefined);
  if (has('nor')) return `\\text{${textModeText(text)}}`;
  const word = /^[A-Za-z]{2,}$/.test(text.trim()) ? text.trim() : undefined;
  if (word && (ctx.fname || sty === 'p')) {
    if (FUNCTIONS.has(word)) return `\\${word}`;
    return ctx.fname ? `\\operatorname{${word}}` : `\\mathrm{${word}}`;
  }
  let body = mathText(text, ctx.amp);
  if (sty === 'b') body = `\\mathbf{${body}}`;
  else if (sty === 'bi') body = `\\boldsymbol{${body}}`;
  const style = scr ? SCRIPT_STYLES[scr] : undefined;
  return style ? `\\${style}{${body}}` : body;
}

function matrix(m: XNode, env: string, ctx: Ctx, depth: number): string {
  const rows = all(m, 'mr').map((mr) => all(mr, 'e').map((e) => seq(kids(e), ctx, depth + 1)).join(' & '));
  return `\\begin{${env}} ${rows.join(' \\\\ ')} \\end{${env}}`;
}

function convert(n: XNode, ctx: Ctx, depth: number): string {
  if (depth > MAX_DEPTH) return plain(n, ctx);
  const name = localName(n);
  switch (name) {
    case 'r':
      return run(n, ctx);
    case 'oMath': case 'e': case 'box': case 'num': case 'den': case 'sub': case 'sup': case 'deg': case 'lim':
    case 'fName': case 'ins': case 'smartTag':
      return seq(kids(n), ctx, depth + 1);
    case 'oMathPara':
      return all(n, 'oMath').map((m) => seq(kids(m), ctx, depth + 1)).join(' \\\\ ');
    case 'f': {
      const type = prop(part(n, 'fPr'), 'type');
      const num = arg(n, 'num', ctx, depth);
      const den = arg(n, 'den', ctx, depth);
      if (type === 'lin') return `${base(num)}/${base(den)}`;
      if (type === 'noBar') return `\\genfrac{}{}{0pt}{}{${num}}{${den}}`;
      return `\\frac{${num}}{${den}}`;
    }
    case 'sSub':
      return `${base(arg(n, 'e', ctx, depth))}_{${arg(n, 'sub', ctx, depth)}}`;
    case 'sSup':
      return `${base(arg(n, 'e', ctx, depth))}^{${arg(n, 'sup', ctx, depth)}}`;
    case 'sSubSup':
      return `${base(arg(n, 'e', ctx, depth))}_{${arg(n, 'sub', ctx, depth)}}^{${arg(n, 'sup', ctx, depth)}}`;
    case 'sPre':
      return `{}_{${arg(n, 'sub', ctx, depth)}}^{${arg(n, 'sup', ctx, depth)}}${base(arg(n, 'e', ctx, depth))}`;
    case 'rad': {
      const deg = flag(part(n, 'radPr'), 'degHide') ? '' : arg(n, 'deg', ctx, depth);
      const e = arg(n, 'e', ctx, depth);
      return deg ? `\\sqrt[${deg}]{${e}}` : `\\sqrt{${e}}`;
    }
    case 'nary': {
      const pr = part(n, 'naryPr');
      let op = mathText(prop(pr, 'chr') ?? '∫');
      const sub = flag(pr, 'subHide') ? '' : arg(n, 'sub', ctx, depth);
      const sup = flag(pr, 'supHide') ? '' : arg(n, 'sup', ctx, depth);
      if (sub) op += `_{${sub}}`;
      if (sup) op += `^{${sup}}`;
      return `${op} ${arg(n, 'e', ctx, depth)}`;
    }
    case 'd': {
      const pr = part(n, 'dPr');
      const beg = prop(pr, 'begChr') ?? '(';
      const end = prop(pr, 'endChr') ?? ')';
      const sep = prop(pr, 'sepChr') ?? '|';
      const es = all(n, 'e');
      const only = es.length === 1 ? elems(es[0]) : [];
      const env = MATRIX_ENV[beg + end];
      // A matrix alone in brackets is one of LaTeX's bracketed matrices (pmatrix, bmatrix…).
      if (env && only.length === 1 && localName(only[0]!) === 'm') return matrix(only[0]!, env, ctx, depth + 1);
      const joint = sep === '|' ? ' \\mid ' : ` ${mathText(sep)} `;
      return `\\left${delimiter(beg)} ${es.map((e) => seq(kids(e), ctx, depth + 1)).join(joint)} \\right${delimiter(end)}`;
    }
    case 'm':
      return matrix(n, 'matrix', ctx, depth);
    case 'eqArr': {
      const rows = all(n, 'e').map((e) => seq(kids(e), { ...ctx, amp: true }, depth + 1));
      return `\\begin{aligned} ${rows.join(' \\\\ ')} \\end{aligned}`;
    }
    case 'acc': {
      const chr = prop(part(n, 'accPr'), 'chr') ?? '\u0302';
      const e = arg(n, 'e', ctx, depth);
      const cmd = accentCommand(chr);
      if (!cmd) return `\\overset{${mathText(chr)}}{${e}}`;
      return `\\${(cmd === 'hat' || cmd === 'tilde') && !single(e) ? `wide${cmd}` : cmd}{${e}}`;
    }
    case 'bar':
      return prop(part(n, 'barPr'), 'pos') === 'top' ? `\\overline{${arg(n, 'e', ctx, depth)}}` : `\\underline{${arg(n, 'e', ctx, depth)}}`;
    case 'groupChr': {
      const pr = part(n, 'groupChrPr');
      const chr = prop(pr, 'chr') ?? '⏟';
      const e = arg(n, 'e', ctx, depth);
      if (chr === '⏟') return `\\underbrace{${e}}`;
      if (chr === '⏞') return `\\overbrace{${e}}`;
      return prop(pr, 'pos') === 'top' ? `\\overset{${mathText(chr)}}{${e}}` : `\\underset{${mathText(chr)}}{${e}}`;
    }
    case 'limLow': {
      const e = arg(n, 'e', ctx, depth);
      const lim = arg(n, 'lim', ctx, depth);
      if (LIMIT_FUNCTIONS.has(e.slice(1)) || e.startsWith('\\underbrace')) return `${e}_{${lim}}`;
      return `\\underset{${lim}}{${e}}`;
    }
    case 'limUpp': {
      const e = arg(n, 'e', ctx, depth);
      const lim = arg(n, 'lim', ctx, depth);
      return e.startsWith('\\overbrace') ? `${e}^{${lim}}` : `\\overset{${lim}}{${e}}`;
    }
    case 'func':
      return `${seq(kids(part(n, 'fName')), { ...ctx, fname: true }, depth + 1)} ${arg(n, 'e', ctx, depth)}`;
    case 'borderBox':
      return `\\boxed{${arg(n, 'e', ctx, depth)}}`;
    case 'phant': {
      const e = arg(n, 'e', ctx, depth);
      return prop(part(n, 'phantPr'), 'show') === '0' || prop(part(n, 'phantPr'), 'show') === 'off' ? `\\phantom{${e}}` : e;
    }
    case 'del':
      return '';
    default:
      // Properties (…Pr), control properties and bookmarks carry no text; anything else unknown
      // keeps its text.
      if (name.endsWith('Pr') || name === 'bookmarkStart' || name === 'bookmarkEnd' || name === 'proofErr') return '';
      return plain(n, ctx);
  }
}

/** One equation (an m:oMath, or any OMML element) as LaTeX on one line. Never throws. */
export function ommlToLatex(node: XNode): string {
  const ctx: Ctx = { amp: false, fname: false };
  let latex: string;
  try {
    latex = convert(node, ctx, 0);
  } catch {
    latex = plain(node, ctx);
  }
  return latex.replace(/\s+/g, ' ').trim();
}

/**
 * Math Markdown made fit for a GFM table cell once its pipes are escaped: a backslash right
 * before a pipe would escape itself and let the pipe end the cell, so `\|` (‖) is `\Vert`.
 */
export function tableCellMath(markdown: string): string {
  return markdown.replace(/\\\|(?=[A-Za-z])/g, '\\Vert ').replace(/\\\|/g, '\\Vert');
}

/** Markdown for a math element: `$…$` inline, `$$…$$` for each equation of an m:oMathPara. */
export function mathMarkdown(node: XNode): string {
  if (localName(node) === 'oMathPara') {
    const maths = all(node, 'oMath');
    return (maths.length > 0 ? maths : [node]).map(ommlToLatex).filter(Boolean).map((l) => `$$${l}$$`).join(' ');
  }
  const latex = ommlToLatex(node);
  return latex ? `$${latex}$` : '';
}
