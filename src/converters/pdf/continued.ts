// What a page break cuts. Each page is rendered on its own, so a table that continues on the
// next page arrives as two tables: the last block of one page and the first block of the next,
// with the same number of columns. They become one table under the first page's marker; a
// header row the continuation repeats is dropped, and the next page's marker follows the
// table. A paragraph that ends a page mid-sentence and goes on in lower case at the top of the
// next becomes one paragraph, placed after the next page's marker. `pages` keeps each page's
// own Markdown.

/** A GFM table's lines split into cells; null when `block` is not a table. */
function tableRows(block: string): string[][] | null {
  const lines = block.split('\n');
  if (lines.length < 2 || !lines.every((l) => l.startsWith('|') && l.endsWith('|'))) return null;
  if (!/^\|( :?-{3,}:? \|)+$/.test(lines[1]!)) return null;
  return lines.map((l) => l.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim()));
}

/** A block that is a plain paragraph (not a heading, list, table, code, figure or marker). */
const isParagraph = (block: string): boolean => !/^(#{1,6} |\||[-*+] |\d+[.)] |```|<!--|!\[|>)/.test(block);

/** The paragraph that ends one page and goes on at the top of the next, as one paragraph; null
 *  when the page ends a sentence or the next does not start mid-sentence. */
function carriedOver(last: string, next: string): string | null {
  if (!isParagraph(last) || !isParagraph(next) || !/^\p{Ll}/u.test(next)) return null;
  if (/[.!?:;]["”’)]?$/.test(last)) return null;
  if (/\p{L}-$/u.test(last)) return last.slice(0, -1) + next;
  return `${last} ${next}`;
}

/** Joins the pages' Markdown with `<!-- page N -->` markers, mending tables and paragraphs cut
 *  by a break: a paragraph that goes on over the break is one paragraph after the marker of
 *  the page it ends on. */
export function joinPages(pages: readonly string[], numbers: readonly number[]): string {
  const blocks: string[] = [];
  // the markers that wait for the end of a table carried over from an earlier page
  let held: string[] = [];
  for (const [i, md] of pages.entries()) {
    const marker = `<!-- page ${numbers[i]} -->`;
    const own = md ? md.split('\n\n') : [];
    const last = blocks[blocks.length - 1];
    const prev = last === undefined ? null : tableRows(last);
    const next = own.length > 0 ? tableRows(own[0]!) : null;
    if (prev && next && prev[0]!.length === next[0]!.length) {
      const same = prev[0]!.join('|') === next[0]!.join('|');
      const rows = next.filter((_, k) => k !== 1 && !(same && k === 0));
      blocks[blocks.length - 1] = `${last}\n${rows.map((r) => `| ${r.join(' | ')} |`).join('\n')}`;
      held.push(marker);
      own.shift();
      if (own.length === 0) continue;
      blocks.push(...held);
      held = [];
      blocks.push(...own);
      continue;
    }
    blocks.push(...held);
    held = [];
    const whole = last !== undefined && held.length === 0 && own.length > 0 ? carriedOver(last, own[0]!) : null;
    if (whole !== null) {
      blocks.pop();
      own[0] = whole;
    }
    blocks.push(marker, ...own);
  }
  blocks.push(...held);
  return blocks.join('\n\n');
}
