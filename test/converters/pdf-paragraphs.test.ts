// Paragraph hygiene of PDF Markdown: hyphens at line ends kept or dropped by the document's own
// words, paragraphs rejoined across a page break, Symbol-font bullets as a list, an inline "(1)"
// left in its sentence.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { pdfConverter } from '../../src/converters/pdf.js';
import { convertWith } from '../helpers/convert-ctx.js';
import * as build from '../fixtures/build/pdf.js';
import * as text from '../fixtures/build/pdf-text.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-pdf-paragraphs-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const file = await build.buildParagraphsPdf(dir);
const { markdown, pages } = await convertWith(pdfConverter, file);

t.test('a compound hyphen at a line end is kept, a hyphen that splits a word is dropped', async (t) => {
  t.match(markdown, 'Their chat-optimized model', '"chat" and "optimized" are words of the document: a compound');
  t.match(markdown, 'as in this example of a short reply', '"example" is a word of the document: the hyphen only split it');
  t.notMatch(markdown, 'chatoptimized');
  t.notMatch(markdown, 'exam-ple');
});

t.test('a paragraph cut by the page break is one paragraph, after the next page marker', async (t) => {
  t.match(markdown, '<!-- page 2 -->\n\nAt the end of the first page this paragraph is cut in the middle of a sentence that the reader finds again at the top of the second page.\n\nA new paragraph starts here.');
  t.match(pages?.[0] ?? '', /sentence that the$/, 'the first page keeps its own part in `pages`');
  t.match(pages?.[1] ?? '', /^reader finds again/);
});

t.test('bullets drawn with the Symbol font make a list', async (t) => {
  t.match(markdown, 'The steps were:\n\n- Collect the questions\n- Write the answers\n- Check the answers');
});

t.test('a "(1)" that starts a wrapped line inside a sentence is not a list item', async (t) => {
  t.match(markdown, 'asked in their notes as (1) How can we keep answers short? came before the second.');
  t.notMatch(markdown, /^1\. How can we/m);
});

t.test('a figure set inside a sentence is placed after the paragraph, never inside it', async (t) => {
  t.match(markdown, /The figure below was drawn while the survey of the regional libraries ran, and it shows the visits of each month\.\n\n!\[Figure 1\]/);
});

/** DejaVu Sans has no glyph for U+F0B7, so its bullets reach the text layer as U+FFFD. */
const NO_BULLET_FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf';

t.test('bullets the PDF gives no Unicode for are a list; a raised footnote digit stays apart', { skip: existsSync(NO_BULLET_FONT) ? false : `needs ${NO_BULLET_FONT} (Debian fonts-dejavu-core)` }, async (t) => {
  const { markdown } = await convertWith(pdfConverter, await text.buildMarkersPdf(dir, NO_BULLET_FONT));
  t.match(markdown, text.MARKERS.bullets.map((b) => `- ${b}`).join('\n'), 'one list item per bullet, in order');
  t.notMatch(markdown, /[\ufffd\uf000-\uf0ff]/u, 'no replacement or private-use character is left');
  t.match(markdown, `${text.MARKERS.footnoted}³ ${text.MARKERS.afterMark}`, 'the mark reads as a superscript, not as a digit of the word');
});
