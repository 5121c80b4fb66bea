// HTML → Markdown, shared by the HTML, URL and Word converters (turndown + turndown-plugin-gfm).
// With opts.mainContent, the page's article alone (main-content.ts) under its title as the `#`
// heading; a page that is not an article is converted whole. Output: atx headings, `-` bullets,
// fenced code with the language from the class names, GFM tables (the first row becomes the
// header when there is no <thead>), links and images made absolute against opts.baseUrl and the
// document's <base href>. Page chrome (scripts, styles, nav, footer, aside, forms, buttons,
// iframes) is dropped. Embedded data: images never reach the output: they become
// `![alt](#embedded-image)`. The result is trimmed, with at most one blank line between blocks.
// HTML that a serializer wrote (mammoth's) goes through writtenHtmlToMarkdown: the same
// preparation and rules on a light tree (light-dom.ts, light-turndown.ts) where its parser reads
// the HTML, else the same as any page.
import { createRequire } from 'node:module';
import TurndownService from 'turndown';
import { type DomElement, type DomNode, tableRules } from './html-tables.js';
import { parseWrittenHtml } from './light-dom.js';
import { lightTurndown } from './light-turndown.js';
import { mainContent, type SourceElement } from './main-content.js';

const require = createRequire(import.meta.url);
// turndown parses with domino in Node; we parse with the same copy to prepare the tree first.
const domino = createRequire(require.resolve('turndown'))('@mixmark-io/domino') as {
  createDocument(html: string): DomDocument;
};
const gfm = require('turndown-plugin-gfm') as { taskListItems(s: TurndownService): void };

interface DomDocument extends DomNode {
  documentElement: (DomElement & SourceElement) | null;
  body: DomElement | null;
  querySelector(sel: string): DomElement | null;
  querySelectorAll(sel: string): ArrayLike<DomElement>;
}

export interface HtmlToMarkdownOptions {
  /** The address the document came from; relative links and images are resolved against it. */
  baseUrl?: string;
  /** Keep the page's main content only (Readability), under its title; false: the whole page. */
  mainContent?: boolean;
}

export const EMBEDDED_IMAGE = '#embedded-image';

const LANG_CLASS = /(?:^|\s)(?:language|lang|highlight(?:-source)?)-([\w#+.-]+)/i;

// Our table rules use control characters as separators; they never belong in a document.
const CONTROLS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g;

export function htmlToMarkdown(html: string, opts: HtmlToMarkdownOptions = {}): string {
  return domMarkdown(html.replace(CONTROLS, ''), opts);
}

/**
 * HTML written by a serializer (the Word converter's, from mammoth): the Markdown htmlToMarkdown
 * makes of it, from a light tree when light-dom.ts reads the HTML (no <base> there: links and
 * images are resolved against opts.baseUrl alone).
 */
export function writtenHtmlToMarkdown(html: string, opts: Pick<HtmlToMarkdownOptions, 'baseUrl'> = {}): string {
  const clean = html.replace(CONTROLS, '');
  const body = parseWrittenHtml(clean);
  if (!body) return domMarkdown(clean, opts);
  prepare(body as unknown as DomDocument, baseOf(undefined, opts.baseUrl));
  return tidy(lightTurndown(service(), body));
}

function domMarkdown(html: string, opts: HtmlToMarkdownOptions): string {
  const doc = domino.createDocument(html);
  const base = baseOf(doc.querySelector('base[href]')?.getAttribute('href'), opts.baseUrl);
  const article = opts.mainContent && doc.documentElement ? mainContent(doc.documentElement, base) : undefined;
  if (!article?.found) return convert(doc, base);
  const body = convert(domino.createDocument(article.html), base);
  return article.title ? `# ${service().escape(article.title)}\n\n${body}`.trim() : body;
}

function convert(doc: DomDocument, base: string | undefined): string {
  prepare(doc, base);
  const root = doc.body ?? doc;
  return tidy(service().turndown(root as unknown as TurndownService.Node));
}

/** The address links are resolved against: the document's <base href>, itself against `baseUrl`. */
function baseOf(baseHref: string | null | undefined, baseUrl: string | undefined): string | undefined {
  const href = baseHref?.trim();
  try {
    if (href) return new URL(href, baseUrl).href;
  } catch { /* a relative <base> without a known address: fall back to the address alone */ }
  try {
    return baseUrl ? new URL(baseUrl).href : undefined;
  } catch {
    return undefined;
  }
}

function absolute(url: string, base: string | undefined): string {
  const u = url.trim();
  if (!base || u.startsWith('#')) return u;
  try {
    return new URL(u, base).href;
  } catch {
    return u;
  }
}

/** Page chrome dropped whole, by tag name. */
const NOISE_TAGS = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'IFRAME', 'FRAME', 'FRAMESET', 'OBJECT', 'EMBED', 'SVG',
  'CANVAS', 'NAV', 'FOOTER', 'ASIDE', 'BUTTON', 'SELECT', 'TEXTAREA', 'DIALOG', 'LINK', 'META', 'TITLE', 'HEAD']);
const HIDDEN_STYLE = /display\s*:\s*none|visibility\s*:\s*hidden/i;
const SCRIPT_URL = /^\s*(javascript|vbscript|data):/i;

/** Page chrome, a text input, and an element hidden by an attribute or its inline style. */
function isNoise(el: DomElement): boolean {
  const name = el.nodeName.toUpperCase();
  if (NOISE_TAGS.has(name)) return true;
  if (name === 'INPUT' && el.getAttribute('type') !== 'checkbox') return true;
  if (el.getAttribute('hidden') !== null || el.getAttribute('aria-hidden') === 'true') return true;
  const style = el.getAttribute('style');
  return style !== null && HIDDEN_STYLE.test(style);
}

/**
 * Drops the page's chrome and hidden elements, drops small forms, and makes links and images
 * absolute, in one walk of the tree (a selector query per rule walked it once each).
 */
function prepare(doc: DomDocument, base: string | undefined): void {
  const noise: DomElement[] = [];
  const forms: DomElement[] = [];
  const links: DomElement[] = [];
  const images: DomElement[] = [];
  // Depth first in document order; the children of a dropped element are not visited.
  const stack: DomNode[] = [doc];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node !== doc) {
      const el = node as DomElement;
      if (isNoise(el)) { noise.push(el); continue; }
      const name = el.nodeName.toUpperCase();
      if (name === 'FORM') forms.push(el);
      else if (name === 'A' && el.getAttribute('href')) links.push(el);
      else if (name === 'IMG') images.push(el);
    }
    const kids = (node as DomElement).children ?? node.childNodes;
    for (let i = kids.length - 1; i >= 0; i--) if (kids[i]!.nodeType === 1) stack.push(kids[i]!);
  }
  // The body's text before anything is dropped; a form is measured once the noise is gone.
  const bodyText = forms.length > 0 ? (doc.body?.textContent ?? '').trim().length : 0;
  for (const el of noise) el.remove();
  // Some sites (ASP.NET WebForms) wrap the whole page in one <form>: drop only small forms.
  for (const form of forms) {
    if ((form.textContent ?? '').trim().length * 2 < bodyText) form.remove();
  }
  for (const a of links) {
    const href = a.getAttribute('href') ?? '';
    if (SCRIPT_URL.test(href)) a.removeAttribute('href');
    else a.setAttribute('href', absolute(href, base));
  }
  for (const img of images) {
    let src = img.getAttribute('src')?.trim() ?? '';
    const lazy = img.getAttribute('data-src')?.trim();
    if (lazy && (!src || src.startsWith('data:'))) src = lazy;
    img.setAttribute('src', src.startsWith('data:') ? EMBEDDED_IMAGE : src && absolute(src, base));
  }
}

let cached: TurndownService | undefined;

/** The turndown service with our rules, built once per thread: its rules hold no state. */
function service(): TurndownService {
  cached ??= buildService();
  return cached;
}

function buildService(): TurndownService {
  const td = new TurndownService({
    headingStyle: 'atx',
    bulletListMarker: '-',
    codeBlockStyle: 'fenced',
    fence: '```',
    emDelimiter: '_',
    strongDelimiter: '**',
    hr: '---',
  });
  gfm.taskListItems(td);
  for (const [key, rule] of Object.entries(tableRules)) td.addRule(key, rule as TurndownService.Rule);
  const el = (n: unknown): DomElement => n as DomElement;

  td.addRule('heading', {
    filter: ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'],
    replacement: (content, node) => {
      const text = content.replace(/\s*\n+\s*/g, ' ').trim();
      return text ? `\n\n${'#'.repeat(Number(el(node).nodeName.charAt(1)))} ${text}\n\n` : '';
    },
  });
  td.addRule('listItem', {
    filter: 'li',
    replacement: (content, node) => {
      const li = el(node);
      const parent = li.parentNode as DomElement | null;
      let prefix = '- ';
      if (parent?.nodeName === 'OL') {
        const start = Number.parseInt(parent.getAttribute('start') ?? '1', 10);
        const index = Array.from(parent.children).filter((c) => c.nodeName === 'LI').indexOf(li);
        prefix = `${(Number.isFinite(start) ? start : 1) + index}. `;
      }
      const body = content.replace(/^\n+/, '').replace(/\n+$/, '')
        .replace(/\n/g, `\n${' '.repeat(prefix.length)}`)
        .replace(/\n +(?=\n)/g, '\n')
        .replace(/^(\[[ x]\]) +/, '$1 ');
      return `${prefix}${body}${li.nextSibling ? '\n' : ''}`;
    },
  });
  td.addRule('codeBlock', {
    filter: (node) => el(node).nodeName === 'PRE',
    replacement: (_content, node) => {
      const pre = el(node);
      const code = preText(pre).replace(/\n$/, '');
      const longest = Math.max(2, ...(code.match(/`+/g) ?? []).map((r) => r.length));
      const fence = '`'.repeat(longest + 1);
      return `\n\n${fence}${languageOf(pre)}\n${code}\n${fence}\n\n`;
    },
  });
  td.addRule('link', {
    filter: (node) => el(node).nodeName === 'A' && !!el(node).getAttribute('href'),
    replacement: (content, node) => {
      const a = el(node);
      const text = content.trim();
      if (!text) return '';
      const title = a.getAttribute('title')?.replace(/\s+/g, ' ').trim();
      return `[${text}](${destination(a.getAttribute('href') ?? '')}${title ? ` "${title.replace(/"/g, '\\"')}"` : ''})`;
    },
  });
  td.addRule('image', {
    filter: 'img',
    replacement: (_content, node) => {
      const img = el(node);
      const src = img.getAttribute('src') ?? '';
      if (!src) return '';
      const alt = td.escape((img.getAttribute('alt') ?? '').replace(/\s+/g, ' ').trim());
      return `![${alt}](${destination(src)})`;
    },
  });
  td.addRule('strikethrough', {
    filter: ['del', 's', 'strike'],
    replacement: (content) => (content.trim() ? `~~${content}~~` : ''),
  });
  return td;
}

function destination(url: string): string {
  const escaped = url.replace(/([<>()])/g, '\\$1');
  return /\s/.test(escaped) ? `<${escaped}>` : escaped;
}

/** The text of a <pre>, with <br> as newlines (textContent alone would drop them). */
function preText(node: DomNode): string {
  let out = '';
  for (const child of Array.from(node.childNodes)) {
    if (child.nodeType === 3) out += child.nodeValue ?? '';
    else if (child.nodeName === 'BR') out += '\n';
    else if (child.nodeType === 1) out += preText(child);
  }
  return out;
}

function languageOf(pre: DomElement): string {
  const code = Array.from(pre.children).find((c) => c.nodeName === 'CODE');
  const parent = pre.parentNode as DomElement | null;
  for (const n of [code, pre, parent?.nodeType === 1 ? parent : undefined]) {
    if (!n) continue;
    const m = LANG_CLASS.exec(n.getAttribute('class') ?? '');
    const lang = m?.[1] ?? n.getAttribute('data-lang') ?? n.getAttribute('data-language');
    if (lang && /^[\w#+.-]+$/.test(lang)) return lang.toLowerCase();
  }
  return '';
}

/** Blank-only lines emptied, at most one blank line in a row, NBSP as spaces; code kept as is. */
function tidy(md: string): string {
  const out: string[] = [];
  let fence: string | null = null;
  let blank = 0;
  for (const line of md.split('\n')) {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence) {
      out.push(line);
      if (m && m[1]!.startsWith(fence) && line.trim() === m[1]) fence = null;
      continue;
    }
    if (m) fence = m[1]!;
    if (line.trim() === '') {
      if (++blank > 1) continue;
      out.push('');
    } else {
      blank = 0;
      out.push(fence ? line : line.replace(/\u00A0/g, ' '));
    }
  }
  return out.join('\n').trim();
}
