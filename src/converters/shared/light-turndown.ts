// turndown's conversion of a tree to Markdown, done on light-dom.ts's trees: the same whitespace
// collapsing, the same tests for blank elements and for the whitespace flanking an inline one,
// the same rules (the caller's TurndownService: its rule list in its order, its escaping) and
// the same joining of their results, so the Markdown is the one turndown makes of the same tree.
// What turndown asks the DOM again and again (is there an <img> anywhere below? what is all the
// text below?) is worked out once per node after the whitespace is collapsed, when the tree
// stops changing.
import type TurndownService from 'turndown';
import type { LightNode } from './light-dom.js';

// HTML's categories as turndown uses them.
const BLOCK = new Set(['ADDRESS', 'ARTICLE', 'ASIDE', 'AUDIO', 'BLOCKQUOTE', 'BODY', 'CANVAS', 'CENTER', 'DD', 'DIR', 'DIV',
  'DL', 'DT', 'FIELDSET', 'FIGCAPTION', 'FIGURE', 'FOOTER', 'FORM', 'FRAMESET', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'HEADER',
  'HGROUP', 'HR', 'HTML', 'ISINDEX', 'LI', 'MAIN', 'MENU', 'NAV', 'NOFRAMES', 'NOSCRIPT', 'OL', 'OUTPUT', 'P', 'PRE',
  'SECTION', 'TABLE', 'TBODY', 'TD', 'TFOOT', 'TH', 'THEAD', 'TR', 'UL']);
const VOID = new Set(['AREA', 'BASE', 'BR', 'COL', 'COMMAND', 'EMBED', 'HR', 'IMG', 'INPUT', 'KEYGEN', 'LINK', 'META',
  'PARAM', 'SOURCE', 'TRACK', 'WBR']);
/** Elements kept even with no text (a link, a table cell). */
const KEPT_BLANK = new Set(['A', 'TABLE', 'THEAD', 'TBODY', 'TFOOT', 'TH', 'TD', 'IFRAME', 'SCRIPT', 'AUDIO', 'VIDEO']);
const HAS_VOID = 1;
const HAS_KEPT_BLANK = 2;
const NO_FLANK = { leading: '', trailing: '' } as const;

type Rules = TurndownService['rules'] & { forNode(node: unknown): TurndownService.Rule & { append?: (o: unknown) => string } };

export function lightTurndown(td: TurndownService, root: LightNode): string {
  collapseWhitespace(root);
  root.freeze();
  const below = new Map<LightNode, number>();
  markBelow(root, below);
  const rules = td.rules as Rules;
  const out = convertChildren(td, rules, root, below);
  rules.forEach((rule) => {
    const append = (rule as { append?: (o: unknown) => string }).append;
    if (typeof append === 'function') join(out, append.call(rule, td.options));
  });
  // (trimEnd drops what \s matches, as turndown's /[\t\r\n\s]+$/ does, without that regex's scans)
  return out.join('').replace(/^[\t\r\n]+/, '').trimEnd();
}

/** Characters turndown's escaping looks for, anywhere or at the start of the text. */
const MAY_ESCAPE = /[\\*`[\]_]|^[-+=#~>\d]/;

/** turndown's escaping, skipped for text that holds nothing it escapes (most text). */
export function escape(td: TurndownService, text: string): string {
  return MAY_ESCAPE.test(text) ? td.escape(text) : text;
}

/** What kinds of element each element has below it (HAS_VOID, HAS_KEPT_BLANK). */
function markBelow(node: LightNode, below: Map<LightNode, number>): number {
  let flags = 0;
  for (let c = node.firstChild; c; c = c.nextSibling) {
    if (c.nodeType !== 1) continue;
    if (VOID.has(c.nodeName)) flags |= HAS_VOID;
    if (KEPT_BLANK.has(c.nodeName)) flags |= HAS_KEPT_BLANK;
    flags |= markBelow(c, below);
  }
  below.set(node, flags);
  return flags;
}

function convertChildren(td: TurndownService, rules: Rules, parent: LightNode, below: Map<LightNode, number>): string[] {
  const out: string[] = [];
  for (let node = parent.firstChild; node; node = node.nextSibling) {
    node.isBlock = BLOCK.has(node.nodeName);
    node.isCode = node.nodeName === 'CODE' || parent.isCode === true;
    let replacement: string;
    if (node.nodeType === 3) {
      replacement = node.isCode ? node.data : escape(td, node.data);
    } else {
      const name = node.nodeName;
      node.isBlank = !VOID.has(name) && !KEPT_BLANK.has(name) && /^\s*$/.test(node.textContent) && below.get(node) === 0;
      node.flankingWhitespace = node.isBlock ? NO_FLANK : flanking(node);
      const rule = rules.forNode(node);
      let content = convertChildren(td, rules, node, below).join('');
      const ws = node.flankingWhitespace;
      if (ws.leading || ws.trailing) content = content.trim();
      replacement = ws.leading + rule.replacement!(content, node as unknown as Parameters<TurndownService.ReplacementFunction>[1], td.options) + ws.trailing;
    }
    join(out, replacement);
  }
  return out;
}

const ASCII_SPACE = /[ \t\r\n]/;
const SPACE = /\s/;

/** The whitespace at the edges of an inline element's text that stays outside its Markdown:
 *  ASCII spaces are dropped where the neighbour already gives one. */
function flanking(node: LightNode): { leading: string; trailing: string } {
  const s = node.textContent;
  let ascii = 0;
  while (ascii < s.length && ASCII_SPACE.test(s[ascii]!)) ascii++;
  let lead = ascii;
  while (lead < s.length && SPACE.test(s[lead]!)) lead++;
  let leading = s.slice(0, lead);
  let trailing = '';
  let trailingAscii = '';
  let trailingOther = '';
  if (lead < s.length) {
    let trail = s.length;
    while (trail > lead && SPACE.test(s[trail - 1]!)) trail--;
    let asciiFrom = s.length;
    while (asciiFrom > trail && ASCII_SPACE.test(s[asciiFrom - 1]!)) asciiFrom--;
    trailing = s.slice(trail);
    trailingAscii = s.slice(asciiFrom);
    trailingOther = s.slice(trail, asciiFrom);
  }
  if (ascii > 0 && flankedBy(node.previousSibling, / $/)) leading = s.slice(ascii, lead);
  if (trailingAscii && flankedBy(node.nextSibling, /^ /)) trailing = trailingOther;
  return { leading, trailing };
}

function flankedBy(sibling: LightNode | null, space: RegExp): boolean {
  if (!sibling) return false;
  if (sibling.nodeType === 3) return space.test(sibling.data);
  return !BLOCK.has(sibling.nodeName) && space.test(sibling.textContent);
}

/** Appends a replacement, with as many newlines between it and what comes before (at most two)
 *  as either side asks for; trailing newlines stay only in the last piece. */
function join(out: string[], replacement: string): void {
  const tail = out.pop() ?? '';
  let end = tail.length;
  while (end > 0 && tail[end - 1] === '\n') end--;
  let start = 0;
  while (start < replacement.length && replacement[start] === '\n') start++;
  const newlines = Math.max(tail.length - end, start);
  if (end > 0) out.push(tail.slice(0, end));
  if (newlines > 0) out.push(newlines > 1 ? '\n\n' : '\n');
  if (start < replacement.length) out.push(replacement.slice(start));
}

/**
 * Collapses runs of whitespace as a browser lays out text: one space, none at the start and end
 * of a block or around a line break, kept next to an image or other void element; text inside
 * <pre> as it is. Text left empty goes. Walks the tree in document order, visiting each element
 * on the way in and again on the way out.
 */
const COLLAPSIBLE = /[\r\n\t]| {2}/;

function collapseWhitespace(root: LightNode): void {
  if (!root.firstChild || root.nodeName === 'PRE') return;
  let prevText: LightNode | null = null;
  let keepLeadingSpace = false;
  let prev: LightNode | null = null;
  let node = step(prev, root);
  while (node !== root) {
    if (node.nodeType === 3) {
      let text = COLLAPSIBLE.test(node.data) ? node.data.replace(/[ \r\n\t]+/g, ' ') : node.data;
      if ((!prevText || prevText.data.endsWith(' ')) && !keepLeadingSpace && text[0] === ' ') text = text.slice(1);
      if (!text) {
        node = removeAndNext(node);
        continue;
      }
      node.data = text;
      prevText = node;
    } else if (BLOCK.has(node.nodeName) || node.nodeName === 'BR') {
      if (prevText) prevText.data = prevText.data.replace(/ $/, '');
      prevText = null;
      keepLeadingSpace = false;
    } else if (VOID.has(node.nodeName) || node.nodeName === 'PRE') {
      prevText = null;
      keepLeadingSpace = true;
    } else if (prevText) {
      keepLeadingSpace = false;
    }
    const next = step(prev, node);
    prev = node;
    node = next;
  }
  if (prevText) {
    prevText.data = prevText.data.replace(/ $/, '');
    if (!prevText.data) removeAndNext(prevText);
  }
}

/** The next node in document order; `prev` tells whether `current` is being left (its last child came before). */
function step(prev: LightNode | null, current: LightNode): LightNode {
  if ((prev && prev.parentNode === current) || current.nodeName === 'PRE') return (current.nextSibling ?? current.parentNode)!;
  return (current.firstChild ?? current.nextSibling ?? current.parentNode)!;
}

function removeAndNext(node: LightNode): LightNode {
  const next = (node.nextSibling ?? node.parentNode)!;
  node.remove();
  return next;
}
