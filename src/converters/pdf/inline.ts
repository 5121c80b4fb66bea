// Inline Markdown for a run of PDF characters: bold, italic and monospace spans from the font
// flags, links from the page's link annotations, and escaping of what Markdown would
// otherwise read as markup. Whitespace at the edge of a styled run is moved outside the
// markers, since "** bold**" is not bold in CommonMark.
import { escapeInline } from '../shared/ocr.js';
import { BOLD, ITALIC, MONO, type PChar } from './model.js';

export const escapeText = escapeInline;

/** Escapes what would start a heading, list, quote or table at the beginning of a block. */
export function escapeBlockStart(s: string): string {
  return s.replace(/^(\s*)(#{1,6}(?=\s)|[-+>|](?=\s)|\d{1,9}(?=[.)]\s))/, '$1\\$2');
}

interface Run { text: string; style: number; link: number }

function runs(chars: readonly PChar[], styled: boolean): Run[] {
  const out: Run[] = [];
  for (const ch of chars) {
    const style = styled ? ch.style & (BOLD | ITALIC | MONO) : 0;
    const link = ch.link;
    const last = out[out.length - 1];
    // a space takes the style of the run it is in, so "bold word" stays one span
    if (last && (last.link === link) && (last.style === style || ch.c === ' ')) last.text += ch.c;
    else out.push({ text: ch.c, style, link });
  }
  return out;
}

const edges = (text: string): [string, string, string] => {
  const m = /^(\s*)(.*?)(\s*)$/s.exec(text)!;
  return [m[1]!, m[2]!, m[3]!];
};

function code(body: string): string {
  const fence = body.includes('`') ? '``' : '`';
  return fence.length > 1 ? `${fence} ${body} ${fence}` : `${fence}${body}${fence}`;
}

/**
 * Runs that share bold/italic are wrapped once, with their monospace parts in backticks
 * inside, so "*const `node` value*" does not become "*const *`node`* value*".
 */
function styledGroup(group: readonly Run[]): string {
  const emphasis = group[0]!.style & (BOLD | ITALIC);
  const inner = group.map((r) => {
    if (!(r.style & MONO)) return escapeText(r.text);
    const [lead, body, trail] = edges(r.text);
    return body === '' ? r.text : lead + code(body) + trail;
  }).join('');
  const [lead, body, trail] = edges(inner);
  if (body === '' || emphasis === 0) return inner;
  const mark = emphasis === (BOLD | ITALIC) ? '***' : emphasis === BOLD ? '**' : '*';
  return lead + mark + body + mark + trail;
}

/** Markdown for `chars`, with inline styles when `styled`, and links resolved from `links`. */
export function inlineMarkdown(chars: readonly PChar[], links: readonly string[], styled: boolean): string {
  let out = '';
  const rs = runs(chars, styled);
  let i = 0;
  while (i < rs.length) {
    const link = rs[i]!.link;
    let body = '';
    while (i < rs.length && rs[i]!.link === link) {
      const emphasis = rs[i]!.style & (BOLD | ITALIC);
      const group: Run[] = [];
      while (i < rs.length && rs[i]!.link === link && (rs[i]!.style & (BOLD | ITALIC)) === emphasis) group.push(rs[i++]!);
      body += styledGroup(group);
    }
    const uri = link >= 0 ? links[link] : undefined;
    if (uri && body.trim() !== '') {
      const m = /^(\s*)(.*?)(\s*)$/s.exec(body)!;
      out += `${m[1]}[${m[2]}](${uri.replace(/[()\s]/g, encodeURIComponent)})${m[3]}`;
    } else {
      out += body;
    }
  }
  return out.replace(/[ \t]+/g, ' ').trim();
}
