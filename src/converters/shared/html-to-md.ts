// HTML → Markdown, shared by the HTML, URL and Word converters (turndown + turndown-plugin-gfm).
// Output: atx headings, `-` bullets, fenced code with the language from the class names, GFM
// tables (the first row becomes the header when there is no <thead>), links and images made
// absolute against opts.baseUrl and the document's <base href>. Page chrome (scripts, styles,
// nav, footer, aside, forms, buttons, iframes) is dropped. Embedded data: images never reach the
// output: they become `![alt](#embedded-image)`. The result is trimmed, with at most one blank
// line between blocks.
import { createRequire } from 'node:module';
import TurndownService from 'turndown';
import { type DomElement, type DomNode, tableRules } from './html-tables.js';

const require = createRequire(import.meta.url);
// turndown parses with domino in Node; we parse with the same copy to prepare the tree first.
const domino = createRequire(require.resolve('turndown'))('@mixmark-io/domino') as {
  createDocument(html: string): DomDocument;
};
const gfm = require('turndown-plugin-gfm') as { taskListItems(s: TurndownService): void };

interface DomDocument extends DomNode {
  body: DomElement | null;
  querySelector(sel: string): DomElement | null;
  querySelectorAll(sel: string): ArrayLike<DomElement>;
}

export interface HtmlToMarkdownOptions {
  /** The address the document came from; relative links and images are resolved against it. */
  baseUrl?: string;
}

export const EMBEDDED_IMAGE = '#embedded-image';

const NOISE = 'script, style, noscript, template, iframe, frame, frameset, object, embed, svg, canvas,'
  + ' nav, footer, aside, button, select, textarea, dialog, link, meta, title, head,'
  + ' input:not([type=checkbox]), [hidden], [aria-hidden=true]';
const LANG_CLASS = /(?:^|\s)(?:language|lang|highlight(?:-source)?)-([\w#+.-]+)/i;

export function htmlToMarkdown(html: string, opts: HtmlToMarkdownOptions = {}): string {
  // Our table rules use control characters as separators; they never belong in a document.
  const doc = domino.createDocument(html.replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g, ''));
  const base = baseOf(doc, opts.baseUrl);
  prepare(doc, base);
  const root = doc.body ?? doc;
  return tidy(service().turndown(root as unknown as TurndownService.Node));
}

function baseOf(doc: DomDocument, baseUrl: string | undefined): string | undefined {
  const href = doc.querySelector('base[href]')?.getAttribute('href')?.trim();
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

function prepare(doc: DomDocument, base: string | undefined): void {
  const bodyText = (doc.body?.textContent ?? '').trim().length;
  for (const el of Array.from(doc.querySelectorAll(NOISE))) el.remove();
  for (const el of Array.from(doc.querySelectorAll('[style]'))) {
    if (/display\s*:\s*none|visibility\s*:\s*hidden/i.test(el.getAttribute('style') ?? '')) el.remove();
  }
  // Some sites (ASP.NET WebForms) wrap the whole page in one <form>: drop only small forms.
  for (const form of Array.from(doc.querySelectorAll('form'))) {
    if ((form.textContent ?? '').trim().length * 2 < bodyText) form.remove();
  }
  for (const a of Array.from(doc.querySelectorAll('a[href]'))) {
    const href = a.getAttribute('href') ?? '';
    if (/^\s*(javascript|vbscript|data):/i.test(href)) a.removeAttribute('href');
    else a.setAttribute('href', absolute(href, base));
  }
  for (const img of Array.from(doc.querySelectorAll('img'))) {
    let src = img.getAttribute('src')?.trim() ?? '';
    const lazy = img.getAttribute('data-src')?.trim();
    if (lazy && (!src || src.startsWith('data:'))) src = lazy;
    img.setAttribute('src', src.startsWith('data:') ? EMBEDDED_IMAGE : src && absolute(src, base));
  }
}

function service(): TurndownService {
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
