// Plain Markdown is rendered in one pass (plain-markdown.ts) to exactly the HTML marked writes,
// and every document that pass is not sure of is left to marked.
import t from 'tap';
import { plainHtml } from '../../../src/converters/shared/plain-markdown.js';
import { markdownToHtml, markedHtml } from '../../../src/converters/shared/markdown.js';
import { int, pick, rng, type Rand } from '../../fixtures/build/fuzz.js';

/** Words a plain document may hold, some looking like markup they are not. */
const PLAIN = ['alpha', 'Beta', 'x1', 'the', 'what?', 'end.', '(paren)', '"quoted"', "it's", 'a>b', 'why!', '42', 'ünï', '日本',
  '2024', '1.5', 'p.s.', 'a-b', '100%', 'a:b', 'h', 'wwx', 'ftp', 'ht'];
/** Plain within a line, though not at its start (where marked may read another block). */
const INNER = ['+1', '=', '!', '#tag', '- x', '1. x', '> x'];
/** What is not plain, or reads differently under GFM. */
const NOT_PLAIN = ['http', 'hTtP', 'www.example.com', 'https://a.b', 'ftp://x', 'user@example.com', 'a&b', '&amp;', '<b>',
  '\\*', '$x$', '~~s~~', '_u_', 'x_y', 'a|b', '![i](a.png)', '[ ]', '[x]', 'a\tb', 'a\u00a0b', '**', '*', '`', '[', ']', '](',
  '**word', 'word**', '*word', 'word*', '** word**', '**word **', '***x***', '**a**b', 'a**b**', '`a``'];
const CODE = ['x', 'a b', 'a&b', '"q"', 'a>b', 'x = 1'];
const ODD_CODE = [' a', 'a ', '<t>', ''];
const TARGETS = ['https://example.com', '/rel/path', '#frag', 'http://x.y/a?b=c', 'mailto:a', 'page.html', 'https://example.com/a-b.c'];
const ODD_TARGETS = ['javascript:alert(1)', 'http://x.y/a?b=c&d=e', 'a b', '<x>', 'x"y', '(p)', 'https://example.com/a_b',
  'data:text/html,x', ''];

/** A span of text; `odd` is the chance that a choice takes what is not plain. */
function span(r: Rand, odd: number, inner = true): string {
  const n = r();
  const w = () => pick(r, PLAIN.slice(0, 12));
  const either = <T>(plain: readonly T[], not: readonly T[]): T => pick(r, r() < odd ? not : plain);
  if (n < 0.6) return either(PLAIN, NOT_PLAIN);
  if (n < 0.62) return inner ? pick(r, INNER) : w();
  if (n < 0.7) return `**${w()}${r() < 0.3 ? ` ${w()}` : ''}**${either(['', '', '.', ',', ')', ':'], ['x', '*', '_'])}`;
  if (n < 0.77) return `*${w()}*${either(['', '', '.', '?'], ['x', '*'])}`;
  if (n < 0.85) return `\`${either(CODE, ODD_CODE)}\``;
  return `[${either([w(), `${w()} ${w()}`], ['', '*a*', '`c`', 'a[b'])}](${either(TARGETS, ODD_TARGETS)})`;
}

function text(r: Rand, odd: number): string {
  let s = span(r, odd, false);
  for (let i = int(r, 0, 10); i > 0; i--) s += (r() < odd ? pick(r, ['', '  ']) : ' ') + span(r, odd);
  return s;
}

function block(r: Rand, odd: number): string {
  const n = r();
  const maybe = <T>(plain: T, not: readonly T[]): T => (r() < odd ? pick(r, not) : plain);
  if (n < 0.2) return `${'#'.repeat(maybe(int(r, 1, 6), [7, 0]))}${maybe(' ', ['', '  '])}${text(r, odd)}${maybe(pick(r, ['', ' ', '  ']), [' #', '#'])}`;
  if (n < 0.6) {
    const lines: string[] = [];
    for (let i = int(r, 1, 3); i > 0; i--) lines.push(text(r, odd) + maybe('', [' ', '  ']));
    return lines.join('\n') + pick(r, ['', '', ' ', '   ']);
  }
  if (n < 0.9) {
    const items: string[] = [];
    const marker = maybe('- ', ['-  ', '* ', '+ ', '1. ', '-']);
    for (let i = int(r, 1, 4); i > 0; i--) items.push(marker + text(r, odd) + maybe('', [' ', '  ']));
    return items.join(maybe('\n', ['\n\n', '\n  ', '\nlazy ']));
  }
  return maybe('', ['---', '===', '    code', '> quote', '```', '| a | b |', '<div>', '[ref]: http://x', ' indented', '- - -', '1) one', '***']);
}

function doc(r: Rand): string {
  // Half the documents are plain but for chance; the others hold what is not plain here and there.
  const odd = r() < 0.5 ? 0 : r() * 0.1;
  let s = block(r, odd);
  for (let i = int(r, 0, 5); i > 0; i--) s += pick(r, ['\n', '\n\n', '\n\n', '\n\n\n']) + block(r, odd);
  return s + pick(r, ['', '\n', '\n\n', '   ']);
}

t.test('on generated documents, what the one pass renders is what marked writes', async (t) => {
  const r = rng(18);
  let plain = 0;
  const differ: Array<{ md: string; plain: string; marked: string }> = [];
  const N = 20_000;
  for (let i = 0; i < N; i++) {
    const md = doc(r);
    const html = plainHtml(md);
    if (html === undefined) continue;
    plain++;
    const expected = markedHtml(md);
    if (html !== expected && differ.length < 5) differ.push({ md, plain: html, marked: expected });
  }
  t.same(differ, [], 'no plain document renders differently');
  // The generator mixes plain spans with what is not: a good share of its documents is plain.
  t.ok(plain > N / 4, `${plain} of ${N} documents rendered in one pass`);
});

t.test('plain documents of every kind the pass knows are rendered by it', async (t) => {
  const docs = [
    '# Weekly notes\n\nSome **bold** text, a [link](https://example.com) and `code`.\n\n- first item\n- second item\n\nA long paragraph, "quoted" and it\'s > that.   ',
    '## Title\nA paragraph\nover two lines with *emphasis*.\n- an item right after it\n\n### End',
    '- **Term**: its meaning\n- `x > y` in code\n\nAfter the list.\n',
    '',
  ];
  for (const md of docs) {
    const html = plainHtml(md);
    t.not(html, undefined, JSON.stringify(md));
    t.equal(html, markedHtml(md), JSON.stringify(md));
    t.equal(markdownToHtml(md), markedHtml(md));
  }
  t.equal(plainHtml(docs[0]!)!.split('\n')[0], '<h1>Weekly notes</h1>');
});

t.test('anything else is left to marked', async (t) => {
  const docs: Record<string, string> = {
    'intraword underscores': 'snake_case_name',
    'a hard break': 'one  \ntwo',
    'a loose list': '- a\n\n- b',
    'a nested list': '- a\n  - b',
    'a lazy continuation': '- a\nb',
    'an ordered list': '1. one',
    'a setext heading': 'Title\n===',
    'a rule': 'a\n\n---',
    'a table': '| a | b |\n|---|---|\n| 1 | 2 |',
    'a bare address': 'see https://example.com today',
    'an address GFM links': 'mail someone@example.com',
    'www': 'www.example.com',
    'an image': '![alt](a.png)',
    'raw HTML': 'a <b>b</b>',
    'an entity': 'a &amp; b',
    'an escape': 'not \\*emphasis\\*',
    'a script link': '[x](javascript:alert(1))',
    'a task': '- [ ] to do',
    'a code fence': '```\ncode\n```',
    'indented code': '    code',
    'a quote': '> quoted',
    'math': 'energy $E=mc^2$',
    'strikethrough': '~~gone~~',
    'a tab': 'a\tb',
    'CRLF': 'a\r\nb',
    'an unmatched star': '2 * 3 = 6',
    'intraword emphasis': 'a**b**c',
    'a marker comment': '<!-- page 2 -->',
    'a reference link': '[a][b]\n\n[b]: https://example.com',
  };
  for (const [what, md] of Object.entries(docs)) {
    t.equal(plainHtml(md), undefined, what);
    t.equal(markdownToHtml(md), markedHtml(md), what);
  }
});
