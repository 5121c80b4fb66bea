// Headings of PDFs: from the outline (bookmarks) when the document has one, else from the
// font statistics and the section numbers, never from short bold labels or captions.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { pdfConverter } from '../../src/converters/pdf.js';
import { convertWith } from '../helpers/convert-ctx.js';
import * as build from '../fixtures/build/pdf.js';
import * as text from '../fixtures/build/pdf-text.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pdf-headings-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const headings = (md: string): string[] => md.split('\n').filter((l) => /^#{1,6} /.test(l));
/** `text` as a pattern that matches it literally. */
const literal = (text: string): string => text.replace(/[()[\]{}.*+?^$|\\]/g, '\\$&');
const expected = build.SECTIONS.map(([depth, title]) => `${'#'.repeat(depth)} ${title}`);

t.test('the outline gives the heading tree: every entry at its depth, nothing else a heading', async (t) => {
  const file = await build.buildSectionsPdf(dir, true);
  const { markdown } = await convertWith(pdfConverter, file);
  t.same(headings(markdown), expected, 'the outline entries found by their titles (numbers printed on the page kept)');
  t.match(markdown, 'The text of section 2.1.1 describes what was done');
});

t.test('without an outline, numbered sections take the depth of their number', async (t) => {
  const file = await build.buildSectionsPdf(dir, false);
  const { markdown } = await convertWith(pdfConverter, file);
  const found = headings(markdown);
  for (const h of expected) t.ok(found.includes(h), `has ${h}`);
  t.notOk(found.some((h) => /Note|Figure 1/.test(h)), 'a short bold label and a caption are not headings');
  t.match(markdown, /^\*\*Note\*\*/m, 'the label is kept as text');
});

t.test('without an outline, a one-word bold label, a caption over two lines and a form field are not headings', async (t) => {
  const { markdown } = await convertWith(pdfConverter, await text.buildNumberedPdf(dir));
  t.same(headings(markdown), ['# Study Report', ...text.NUMBERED.map(([title, level]) => `${'#'.repeat(level)} ${title}`)],
    'the title and every numbered section (3, 3.4, A.1) at its number\'s depth, nothing else');
  for (const line of text.NOT_HEADINGS) t.notMatch(markdown, new RegExp(`^#+ ${literal(line)}`, 'm'), `"${line}" is not a heading`);
  t.match(markdown, `${text.NOT_HEADINGS[1]} ${text.NOT_HEADINGS[2]}`, 'the wrapped caption stays one caption');
});

t.test('slide points set large and bold are text, not a run of headings; the slide titles are headings', async (t) => {
  const { markdown } = await convertWith(pdfConverter, await text.buildSlidesPdf(dir));
  t.same(headings(markdown).map((h) => h.replace(/^#+ /, '')), text.SLIDES.map((s) => s.title), 'only the titles');
  for (const p of text.SLIDES.flatMap((s) => s.points)) t.match(markdown, p, `"${p}" is kept as text`);
});

t.test('"Chapter 2" above the chapter title makes one heading with it', async (t) => {
  const { markdown } = await convertWith(pdfConverter, await text.buildChapterPdf(dir));
  t.same(headings(markdown), ['# Chapter 2 Results']);
});

t.test('without an outline, a manual gets its heading tree: numbered sections at their depth, unnumbered titles at the level of their style, index letters under "Index"', async (t) => {
  const { markdown } = await convertWith(pdfConverter, await text.buildManualPdf(dir));
  t.same(headings(markdown), text.MANUAL.headings.map(([title, level]) => `${'#'.repeat(level)} ${title}`),
    'the title beside the sections, not above them; "2 Methods" keeps its number at the top of its page');
  for (const line of text.MANUAL.byline) t.match(markdown, new RegExp(`^${line}$`, 'm'), `the title page's "${line}" is a line of text`);
  const index = markdown.slice(markdown.indexOf('# Index'));
  const order = Object.entries(text.MANUAL.index).flatMap(([letter, terms]) => [`## ${letter}`, ...terms]);
  t.same(order.map((s) => index.indexOf(s)).every((at, i, all) => at >= 0 && (i === 0 || at > all[i - 1]!)), true,
    'the index read column by column: each letter before its entries, A and B before C and D');
});

t.test('a contents page: its title is a heading, its bold entries over leader lines are not; a large mark in the margin or a large bullet does not make a line a heading', async (t) => {
  const { markdown } = await convertWith(pdfConverter, await text.buildContentsPdf(dir));
  t.same(headings(markdown), text.CONTENTS.headings, 'the title, "Contents" and the sections after the list, nothing else');
  for (const entry of text.CONTENTS.entries) t.match(markdown, new RegExp(`^\\*\\*${literal(entry)}\\*\\*$`, 'm'), `"${entry}" is a bold line of the contents`);
  t.match(markdown, /^Training the interviewers …$/m, 'leaders that end a line become " …"');
  t.match(markdown, text.CONTENTS.marked[0]!, 'the line beside the "!!" is text');
  t.match(markdown, new RegExp(`^- ${text.CONTENTS.marked[1]}$`, 'm'), 'the line after a large bullet is a list item');
  t.match(markdown, new RegExp(`^- \\*\\*${text.CONTENTS.point}\\*\\*$`, 'm'), 'a bullet set large and bold opens a list item, not a heading');
});

t.test('a title broken at a hyphen goes on in the next line; a contents entry broken so is a line of the contents, not a heading', async (t) => {
  const { markdown } = await convertWith(pdfConverter, await text.buildBrokenTitlesPdf(dir));
  const [first, rest] = text.BROKEN.entry;
  const entry = `${first!.slice(0, -1)}${rest} ${text.BROKEN.entryPage}`;
  t.same(headings(markdown), ['# Contents', `# ${text.BROKEN.title[0]!.slice(0, -1)}${text.BROKEN.title[1]}`],
    'the section title whole, its hyphen dropped; no entry of the contents');
  t.match(markdown, new RegExp(`^\\*\\*${literal(entry)}\\*\\*$`, 'm'), 'the broken entry is one bold line, with its page number');
  t.match(markdown, /^\*\*3 Results for the coastal stations 6\*\*$/m, 'the entry after it stays a line of its own');
});

t.test('lines set large that hold one sentence\'s end and the next one\'s start are a paragraph, not a title', async (t) => {
  const { markdown } = await convertWith(pdfConverter, await text.buildLeadPdf(dir));
  t.same(headings(markdown), [`# ${text.LEAD.title}`]);
  t.match(markdown, new RegExp(`^${literal(text.LEAD.lines.join(' '))}$`, 'm'), 'the lead is one paragraph');
});

t.test('with an outline, the linked entries of a contents above a section are not its heading: the title is', async (t) => {
  const { markdown } = await convertWith(pdfConverter, await text.buildLinkedContentsPdf(dir));
  t.same(headings(markdown), text.LINKED.sections.map((s) => `# ${s}`), 'one heading per outline entry');
  for (const s of text.LINKED.sections) {
    t.match(markdown, new RegExp(`^\\[\\*\\*${literal(s)}\\*\\*\\]\\(#page-\\d\\)`, 'm'), `the contents entry "${s}" stays a link`);
  }
  t.ok(markdown.indexOf(`# ${text.LINKED.sections[0]}`) > markdown.indexOf(`[**${text.LINKED.sections[1]}**]`),
    'the first heading is the title under the contents');
  t.match(markdown, new RegExp(`^# ${literal(text.LINKED.sections[0]!)}\\n\\n${literal(text.LINKED.body)}`, 'm'), 'followed by its text');
});

t.test('with an outline, an entry that is a short form of its printed title heads that title, and only a line that starts with its number', async (t) => {
  const { markdown } = await convertWith(pdfConverter, await text.buildShortOutlinePdf(dir));
  const named = text.SHORT_OUTLINE.filter(([, entry]) => entry !== null).map(([printed]) => `# ${printed}`);
  t.same(headings(markdown), named, 'the printed titles of the two entries, at level 1');
  t.match(markdown, /^\*\*1\.2 Package hyperref\*\*$/m, 'the title the outline does not name stays bold text');
});
