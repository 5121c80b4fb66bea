// Plain Markdown rendered to HTML in one pass, to the very bytes marked writes for it (markdown.ts).
// Plain means: ATX headings, paragraphs and tight `-` lists, whose text has at most `**strong**`,
// `*emphasis*`, `` `code` `` and `[text](target)` in their simplest form. Anything else, or
// anything whose reading marked could take differently (a delimiter that is not plainly an
// opener or a closer, an indented line, a bare address GFM would link, an escape, raw HTML, a
// table pipe, math), gives undefined and marked renders the document: the answer is marked's in
// every case, and test/converters/shared/plain-markdown.test.ts holds the two to the same output
// on generated documents.
//
// Why: under scenario A's load, marked took 26.6 % of an HTTP thread's CPU (about 45 µs of a 1 KB
// document: its lexer tries each block and inline rule's expression in turn, builds tokens, then
// walks them); this pass reads each character once.
import { escapeHtml, HTML_ENTITIES, safeHref } from './safe-html.js';

/** Characters no plain document has: escapes, raw HTML and entities, strikethrough, math, table
 *  pipes, `_` (whose intraword rules this pass does not follow), and whitespace other than space
 *  and newline (tabs, CR, NBSP … are read by rules this pass does not follow). */
// eslint-disable-next-line no-control-regex
const NOT_PLAIN = /[\\<&~$|_\u0000-\u0009\u000b-\u001f\u007f\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]/;

/** A line (or a list item's text) must start like text, not like another block (a nested list,
 *  a rule, a quote …): a letter, a digit, an opening bracket or quote, a span, or any character
 *  past ASCII (none of which opens a block). */
const TEXT_START = /^(?:[A-Za-z0-9`("'[\u0080-\uffff]|\*\*?[^\s*])/;
/** An ordered list's marker, which this pass leaves to marked. */
const ORDERED = /^\d{1,9}[.)](?: |$)/;
/** A link target kept as written: no spaces, quotes, parentheses or entities to read. */
const TARGET = /^[A-Za-z0-9\-.:/?#=%+,;]+$/;

/** The HTML marked writes for `md`, or undefined when `md` is not plain. */
export function plainHtml(md: string): string | undefined {
  if (NOT_PLAIN.test(md)) return undefined;
  const lines = md.split('\n');
  let out = '';
  /** The open paragraph's first line, or -1. */
  let para = -1;
  /** In a list; after a blank line in it (where another item would make the list loose). */
  let list = false;
  let blankInList = false;
  // One more turn than there are lines: a blank line past the end closes what is open.
  for (let n = 0; n <= lines.length; n++) {
    const line = n < lines.length ? lines[n]! : '';
    const first = line.charCodeAt(0);
    const heading = first === 0x23; /* # */
    const item = first === 0x2d; /* - */
    if (para >= 0 && (line === '' || heading || item)) {
      const html = inline(para === n - 1 ? lines[para]! : lines.slice(para, n).join('\n'));
      if (html === undefined) return undefined;
      out += `<p>${html}</p>\n`;
      para = -1;
    }
    if (line === '') {
      blankInList = list;
      continue;
    }
    if (list && !item) {
      // A line of text right after an item continues it (lazily): left to marked.
      if (!blankInList && !heading) return undefined;
      out += '</ul>\n';
      list = blankInList = false;
    }
    if (heading) {
      const m = /^(#{1,6}) +(.*)$/.exec(line);
      const text = m?.[2]!.trimEnd();
      if (!m || !text || text.endsWith('#')) return undefined;
      const html = inline(text);
      if (html === undefined) return undefined;
      const level = m[1]!.length;
      out += `<h${level}>${html}</h${level}>\n`;
    } else if (item) {
      // An item's trailing spaces are kept or dropped by where it stands in its list: left to marked.
      const text = line.slice(2);
      if (line.charCodeAt(1) !== 0x20 || !TEXT_START.test(text) || text.endsWith(' ') || blankInList) return undefined;
      const html = inline(text);
      if (html === undefined) return undefined;
      if (!list) out += '<ul>\n';
      list = true;
      out += `<li>${html}</li>\n`;
    } else {
      // Anything that could open another block is not plain; nor are trailing spaces inside a
      // paragraph (a hard break, or dropped): only its last line may keep them.
      if (!TEXT_START.test(line) || ORDERED.test(line) || (para >= 0 && lines[n - 1]!.endsWith(' '))) return undefined;
      if (para < 0) para = n;
    }
  }
  if (list) out += '</ul>\n';
  return out;
}

/** What a character is to inline(): nothing (0), or what to look at. */
const ESCAPED = 1;
const NEVER = 2;
const BANG = 3;
const SCHEME = 4;
const STAR = 5;
const TICK = 6;
const BRACKET = 7;
const KIND = new Uint8Array(128);
// `&` and `<` never reach inline() (NOT_PLAIN): the other characters escapeHtml writes as entities.
for (const c of '"\'>') KIND[c.charCodeAt(0)] = ESCAPED;
for (const c of '@]') KIND[c.charCodeAt(0)] = NEVER;
for (const c of 'hHfFwW') KIND[c.charCodeAt(0)] = SCHEME;
KIND[0x21] = BANG;
KIND[0x2a] = STAR;
KIND[0x60] = TICK;
KIND[0x5b] = BRACKET;

/**
 * A block's text as HTML; undefined where it holds more than plain text and the simplest spans.
 * `spans` false: plain text alone (a span's own text).
 */
function inline(text: string, spans = true): string | undefined {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const kind = c < 128 ? KIND[c] : 0;
    if (kind === 0) continue;
    if (kind === ESCAPED) {
      out += text.slice(from, i) + HTML_ENTITIES[text[i]!];
      from = i + 1;
    } else if (kind === NEVER || (kind === BANG && text.charCodeAt(i + 1) === 0x5b /* an image */)) {
      return undefined;
    } else if (kind === SCHEME) {
      if (autolinked(text, i)) return undefined;
    } else if (kind === BANG) {
      continue;
    } else if (!spans) {
      return undefined;
    } else {
      const end = kind === STAR ? emphasis(text, i) : kind === TICK ? code(text, i) : link(text, i);
      if (end === undefined) return undefined;
      out += text.slice(from, i) + end.html;
      i = end.last;
      from = i + 1;
    }
  }
  return from === 0 ? text : out + text.slice(from);
}

/** A span and the index of its last character. */
interface Span { html: string; last: number }

/** `**strong**` or `*emphasis*` at `i`, read only where it can be read one way: an opener after
 *  a space (or the start) and before a non-space, a closer after a non-space and before a space,
 *  the end or closing punctuation, plain text between. */
function emphasis(text: string, i: number): Span | undefined {
  const run = text.charCodeAt(i + 1) === 0x2a ? 2 : 1;
  const open = i + run;
  const close = text.indexOf(run === 2 ? '**' : '*', open);
  if (close <= open || (i > 0 && !isSpace(text.charCodeAt(i - 1))) || isSpace(text.charCodeAt(open))
    || isSpace(text.charCodeAt(close - 1)) || !closes(text.charCodeAt(close + run))) return undefined;
  const inner = text.slice(open, close);
  const html = inner.includes('\n') ? undefined : inline(inner, false);
  if (html === undefined) return undefined;
  const tag = run === 2 ? 'strong' : 'em';
  return { html: `<${tag}>${html}</${tag}>`, last: close + run - 1 };
}

/** `` `code` `` at `i`: one backtick each side, no space just inside, on one line. */
function code(text: string, i: number): Span | undefined {
  const close = text.indexOf('`', i + 1);
  if (close < 0 || close === i + 1 || text.charCodeAt(close + 1) === 0x60) return undefined;
  const body = text.slice(i + 1, close);
  if (body.includes('\n') || body.startsWith(' ') || body.endsWith(' ')) return undefined;
  return { html: `<code>${escapeHtml(body)}</code>`, last: close };
}

/** `[text](target)` at `i`: plain text, and a target to keep as written (see TARGET). */
function link(text: string, i: number): Span | undefined {
  const mid = text.indexOf('](', i + 1);
  const close = mid < 0 ? -1 : text.indexOf(')', mid + 2);
  if (close < 0) return undefined;
  const label = text.slice(i + 1, mid);
  const target = text.slice(mid + 2, close);
  if (label === '' || /[[\n]/.test(label) || !TARGET.test(target) || safeHref(target) !== target) return undefined;
  const html = inline(label, false);
  return html === undefined ? undefined : { html: `<a href="${escapeHtml(target)}">${html}</a>`, last: close };
}

/** Whether GFM may read a link at `i`: `http`, `ftp:` or `www.` (any case). */
function autolinked(text: string, i: number): boolean {
  const c = text.charCodeAt(i) | 0x20;
  if (c === 0x68) return lower(text, i + 1) === 0x74 && lower(text, i + 2) === 0x74 && lower(text, i + 3) === 0x70;
  if (c === 0x66) return lower(text, i + 1) === 0x74 && lower(text, i + 2) === 0x70 && text.charCodeAt(i + 3) === 0x3a;
  return lower(text, i + 1) === 0x77 && lower(text, i + 2) === 0x77 && text.charCodeAt(i + 3) === 0x2e;
}

/** The character at `i`, lower-cased if it is an ASCII letter (others only compare unequal to
 *  the letters looked for). */
function lower(text: string, i: number): number {
  return text.charCodeAt(i) | 0x20;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a;
}

/** After a closing delimiter: the end, a space, a newline or closing punctuation. */
function closes(c: number): boolean {
  return Number.isNaN(c) || isSpace(c) || c === 0x2e || c === 0x2c || c === 0x3b || c === 0x3a || c === 0x21 || c === 0x3f || c === 0x29;
}
