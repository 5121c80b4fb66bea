// The shared post-steps: Markdown clean-up, and Markdown → HTML / plain text (GFM, via marked).
// HTML output never passes raw HTML from the input through: it is escaped, and links or images
// with script-capable schemes lose their target. This is what makes the service safe to render.
import { Marked, type Token, type Tokens } from 'marked';
import { escapeHtml, safeHref } from './safe-html.js';
import { plainHtml } from './plain-markdown.js';

/** An HTML comment alone on its line that cannot end early or open a tag (no `--`, `<` or `>`
 *  inside): the converters' page and slide markers and their notes (`<!-- hidden row 3 skipped
 *  -->`). Anything else raw is escaped. */
const MARKER_RE = /^<!--(?:(?!--)[^<>\n])*-->\n*$/;

/** TeX between dollars, as the Word and PowerPoint converters write equations. */
interface MathToken { type: 'math'; raw: string; text: string; display: boolean }

/** `$$…$$`: up to the next `$`, which must be the first of two. */
const DISPLAY_MATH = /^\$\$((?:[^$\\]|\\[\s\S])+?)\$\$/;
/** `$…$` within a line, by pandoc's rule: no space just inside either dollar, and a closing
 *  dollar not followed by a digit (so `$5 and $10` is money, not math). */
const INLINE_MATH = /^\$((?:[^\s$\\]|\\[^\n])(?:(?:[^$\\\n]|\\[^\n])*?(?:[^\s$\\]|\\[^\n]))?)\$(?!\d)/;

/**
 * Equations pass through as TeX, untouched by Markdown's escapes and emphasis: the HTML output
 * writes them as `<span class="math inline">\(…\)</span>` and `<span class="math display">\[…\]</span>`
 * (escaped; what MathJax and KaTeX pick up), the text output as they were written. Each try
 * stops at the next dollar, so the work stays linear in the input.
 */
const math = {
  name: 'math',
  level: 'inline' as const,
  start(src: string): number | undefined {
    const i = src.indexOf('$');
    return i < 0 ? undefined : i;
  },
  tokenizer(src: string): MathToken | undefined {
    const display = DISPLAY_MATH.exec(src);
    if (display) return { type: 'math', raw: display[0], text: display[1]!, display: true };
    const inline = INLINE_MATH.exec(src);
    if (inline) return { type: 'math', raw: inline[0], text: inline[1]!, display: false };
    return undefined;
  },
  renderer(token: Tokens.Generic): string {
    const t = token as unknown as MathToken;
    return t.display
      ? `<span class="math display">\\[${escapeHtml(t.text)}\\]</span>`
      : `<span class="math inline">\\(${escapeHtml(t.text)}\\)</span>`;
  },
};

const marked = new Marked({
  gfm: true,
  breaks: false,
  extensions: [math],
  renderer: {
    html({ text }: Tokens.HTML | Tokens.Tag): string {
      // the converters' own markers and notes stay comments (nothing in them can close one)
      if (MARKER_RE.test(text)) return text;
      return escapeHtml(text);
    },
    link({ href, title, tokens }: Tokens.Link): string {
      const inner = this.parser.parseInline(tokens);
      const safe = safeHref(href);
      if (safe === null) return inner;
      const t = title ? ` title="${escapeHtml(title)}"` : '';
      return `<a href="${escapeHtml(safe)}"${t}>${inner}</a>`;
    },
    image({ href, title, text }: Tokens.Image): string {
      const safe = safeHref(href);
      if (safe === null) return escapeHtml(text);
      const t = title ? ` title="${escapeHtml(title)}"` : '';
      return `<img src="${escapeHtml(safe)}" alt="${escapeHtml(text)}"${t}>`;
    },
  },
});

/** Markdown as HTML: plain documents in one pass (plain-markdown.ts), the others by marked. */
export function markdownToHtml(md: string): string {
  return plainHtml(md) ?? markedHtml(md);
}

/** Markdown as HTML by marked, whatever the document (what plainHtml must match). */
export function markedHtml(md: string): string {
  return marked.parse(md, { async: false }) as string;
}

/**
 * A document with every construct the renderer knows: block and inline rules, GFM's tables,
 * task lists, strikethrough and autolinks, math, a marker comment and raw HTML.
 */
const WARM_UP = [
  '# Heading', '', 'Setext heading', '===', '',
  'A paragraph with **bold**, _emphasis_, ~~strike~~, `code`, a [link](https://example.com "title"), ![an image](a.png),',
  'https://example.org, www.example.net, someone@example.com, $x^2$ and a hard  ', 'break.', '',
  '> A quote', '', '- an item', '- [ ] a task', '  - nested', '', '1. one', '2. two', '',
  '| a | b |', '|---|:-:|', '| 1 | 2 |', '', '```js', 'code', '```', '', '    indented', '',
  '<!-- page 2 -->', '', '<b>raw</b>', '', '$$\\int x\\,dx$$', '', '---', '',
].join('\n');

/**
 * Renders WARM_UP to HTML and text a few times; returns the last HTML. V8 compiles a regular
 * expression on its first use and a function on its first call, and marked's first render of a
 * 1 KB document in a new thread took 39–45 ms against well under 1 ms after (here, on 2 cores):
 * the HTTP threads call this before they accept, so their first requests do not pay it.
 */
export function warmUp(): string {
  let html = '';
  for (let i = 0; i < 3; i++) {
    html = markdownToHtml(WARM_UP);
    markdownToText(WARM_UP);
  }
  return html;
}

/** Plain text: the words of the document, blocks separated by blank lines, no markup. */
export function markdownToText(md: string): string {
  const tokens = marked.lexer(md);
  return normaliseBlankLines(blocks(tokens, '').join('\n\n')).trim() + '\n';
}

function blocks(tokens: Token[], indent: string): string[] {
  const out: string[] = [];
  for (const t of tokens) {
    switch (t.type) {
      case 'space':
      case 'hr':
      case 'def':
        break;
      case 'heading':
      case 'paragraph':
        out.push(indent + inline((t as Tokens.Heading | Tokens.Paragraph).tokens));
        break;
      case 'text': {
        const tt = t as Tokens.Text;
        out.push(indent + (tt.tokens ? inline(tt.tokens) : decode(tt.text)));
        break;
      }
      case 'code':
        out.push((t as Tokens.Code).text.split('\n').map((l) => indent + l).join('\n'));
        break;
      case 'blockquote':
        out.push(...blocks((t as Tokens.Blockquote).tokens, indent));
        break;
      case 'list': {
        const list = t as Tokens.List;
        const start = typeof list.start === 'number' ? list.start : 1;
        const items = list.items.map((item, i) => {
          const bullet = list.ordered ? `${start + i}. ` : '- ';
          const body = blocks(item.tokens, '').join('\n');
          const lines = body.split('\n');
          return indent + bullet + lines[0] + lines.slice(1).map((l) => `\n${indent}${' '.repeat(bullet.length)}${l}`).join('');
        });
        out.push(items.join('\n'));
        break;
      }
      case 'table': {
        const table = t as Tokens.Table;
        const row = (cells: Tokens.TableCell[]): string => indent + cells.map((c) => inline(c.tokens)).join('\t');
        out.push([row(table.header), ...table.rows.map(row)].join('\n'));
        break;
      }
      case 'html':
        out.push(indent + (t as Tokens.HTML).text.replace(/<[^>]*>/g, '').trim());
        break;
      default:
        if ('text' in t && typeof t.text === 'string') out.push(indent + t.text);
    }
  }
  return out.filter((b) => b.trim() !== '');
}

function inline(tokens: Token[] | undefined): string {
  if (!tokens) return '';
  let s = '';
  for (const t of tokens) {
    switch (t.type) {
      case 'strong': case 'em': case 'del':
        s += inline((t as Tokens.Strong).tokens);
        break;
      case 'link': {
        // the target stays readable where the text is not the address itself
        const link = t as Tokens.Link;
        const text = inline(link.tokens);
        const bare = link.href.replace(/^mailto:/i, '');
        s += /^(https?|mailto|ftp):/i.test(link.href) && text.trim() !== link.href && text.trim() !== bare ? `${text} (${link.href})` : text;
        break;
      }
      case 'image':
        s += (t as Tokens.Image).text;
        break;
      case 'codespan':
        s += decode((t as Tokens.Codespan).text);
        break;
      case 'br':
        s += '\n';
        break;
      case 'html':
        break;
      case 'text': {
        const tt = t as Tokens.Text;
        s += tt.tokens ? inline(tt.tokens) : decode(tt.text);
        break;
      }
      case 'escape':
        s += (t as Tokens.Escape).text;
        break;
      case 'math':
        s += (t as unknown as MathToken).raw;
        break;
      default:
        if ('text' in t && typeof t.text === 'string') s += t.text;
    }
  }
  return s;
}

const entities: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
function decode(s: string): string {
  return s.replace(/&(amp|lt|gt|quot|#39);/g, (e) => entities[e]!);
}

function normaliseBlankLines(s: string): string {
  return s.replace(/\n{3,}/g, '\n\n');
}

/**
 * The clean-up every converter's Markdown gets once, in the registry: LF newlines, no trailing
 * spaces outside code blocks (except a Markdown hard break of two spaces), at most one blank
 * line between blocks outside code blocks, one final newline.
 */
export function cleanMarkdown(md: string): string {
  const lines = md.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let fence: string | null = null;
  let blank = 0;
  for (const raw of lines) {
    const f = /^\s{0,3}(`{3,}|~{3,})/.exec(raw);
    if (fence) {
      out.push(raw);
      if (f && f[1]![0] === fence[0] && f[1]!.length >= fence.length && raw.trim() === f[1]) fence = null;
      continue;
    }
    if (f) fence = f[1]!;
    const line = /\S {2}$/.test(raw) ? raw.replace(/\s+$/, '  ') : raw.replace(/\s+$/, '');
    if (line === '') {
      blank++;
      if (blank > 1 || out.length === 0) continue;
    } else blank = 0;
    out.push(line);
  }
  while (out.length && out[out.length - 1] === '') out.pop();
  return out.length ? out.join('\n') + '\n' : '';
}
