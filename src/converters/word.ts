// Word converter (.docx): mammoth turns the document into HTML (through office/docx-mammoth: its
// style rules parsed once per thread, its parts read by office/docx-xml), shared/html-to-md turns
// that into Markdown (writtenHtmlToMarkdown: a light tree, no DOM). Word-specific steps around them:
// - mammoth reads the package through our ZipArchive (every part inflated under the zip limits,
//   only the parts it needs, never the zip as a whole);
// - before mammoth, office/docx-prepare rewrites the body and notes: equations and charts become
//   placeholder words, swapped here for LaTeX (`$…$`, `$$…$$`) and for the chart's title and
//   data table once the Markdown is made; text boxes of shapes are moved where mammoth reads them;
// - office/docx-tree adjusts mammoth's tree: checkboxes as ☒/☐, vertically merged cells laid out
//   in their grid columns (the text once, in the first cell), tables nested in cells flattened;
// - images become `![alt](image)` placeholders without their bytes ever being read (so an image
//   linked to file:///etc/passwd reads nothing);
// - footnotes and endnotes become Markdown footnotes `[^n]`, numbered in reading order; comments
//   are left out (mammoth's default).
// Pricing: pages of 3,000 characters of body text.
// .doc, .odt and .rtf arrive here as their .docx twin, made by LibreOffice (legacy/).
import { ApiError } from '../errors.js';
import { chartBlocks, readChart, type ChartData } from './office/chart.js';
import { Placeholders, preparePart } from './office/docx-prepare.js';
import type { DocxFile } from './office/docx-mammoth.js';
import { transformDocument } from './office/docx-tree.js';
import { tableCellMath } from './office/omml.js';
import { escapeMd } from './office/pptx-text.js';
import { acceptsOoxml, decodeXml, readRels, requireOfficeKind, type Rel } from './office/ooxml.js';
import { scanPart } from './office/xml-scan.js';
import { writtenHtmlToMarkdown } from './shared/html-to-md.js';
import { withZip, type ZipArchive } from './shared/zip-limits.js';
import { lazyModule } from './shared/lazy-module.js';
import type { Converter, Count } from './types.js';
import { withLegacyFormats } from './legacy/index.js';

const DOCX_TYPES = [
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.ms-word.document.macroenabled.12',
] as const;
const DOCX_EXTENSIONS = ['.docx', '.docm'] as const;
const CHARS_PER_PAGE = 3000;

const STYLE_MAP = ["p[style-name='Title'] => h1:fresh", "p[style-name='Subtitle'] => p:fresh"];

const W_T = /<w:t(?:\s[^<>]*)?>([^<]*)<\/w:t>/g;

/** Characters of body text (w:t runs of the main part), streamed: no conversion involved. */
async function bodyChars(zip: ZipArchive, mainPart: string): Promise<number> {
  let chars = 0;
  for await (const m of scanPart(zip, mainPart, W_T)) chars += decodeXml(m[1]!).length;
  return chars;
}

function charsOf(xml: string): number {
  let chars = 0;
  for (const m of xml.matchAll(W_T)) chars += decodeXml(m[1]!).length;
  return chars;
}

const pagesOf = (chars: number): number => Math.max(1, Math.ceil(chars / CHARS_PER_PAGE));

/** Moves mammoth's note list out of the HTML: references become `<stem>N<n>X` words, bodies definitions. */
function extractNotes(html: string, stem: string): { html: string; notes: string[] } {
  const start = html.search(/<ol><li id="(?:footnote|endnote)-/);
  if (start < 0) return { html, notes: [] };
  const bodies = new Map<string, string>();
  for (const m of html.slice(start).matchAll(/<li id="((?:footnote|endnote)-[^"]+)">([\s\S]*?)<\/li>(?=<li id="(?:footnote|endnote)-|<\/ol>$)/g)) {
    bodies.set(m[1]!, m[2]!.replace(/\s*<a href="#(?:footnote|endnote)-ref-[^"]+">↑<\/a>/g, ''));
  }
  const notes: string[] = [];
  const body = html.slice(0, start).replace(
    /<sup><a href="#((?:footnote|endnote)-[^"]+)" id="[^"]*">\[\d+\]<\/a><\/sup>/g,
    (_, id: string) => {
      const text = bodies.get(id);
      if (text === undefined) return '';
      notes.push(text);
      return `${stem}N${notes.length}X`;
    },
  );
  return { html: body, notes };
}

function noteDefinitions(notes: string[]): string {
  return notes
    .map((body, i) => {
      const md = writtenHtmlToMarkdown(body).trim();
      return `[^${i + 1}]: ${md.replace(/\n/g, '\n    ').replace(/\n {4}(?=\n)/g, '\n')}`;
    })
    .join('\n');
}

/** The package as mammoth reads it (its docx-file interface), with the rewritten parts. */
function packageFile(zip: ZipArchive, prepared: Map<string, string>): DocxFile {
  return {
    exists: (name: string): boolean => zip.has(name),
    async read(name: string, encoding?: string): Promise<string | Uint8Array> {
      const text = prepared.get(name.replace(/^\/+/, '').toLowerCase());
      if (encoding === 'utf-8' || encoding === 'utf8') return text ?? zip.readText(name);
      const bytes = text === undefined ? await zip.read(name) : Buffer.from(text);
      return encoding === 'base64' ? bytes.toString('base64') : bytes;
    },
  };
}

/** The body, footnotes and endnotes, rewritten by docx-prepare; returns the body's characters. */
async function prepareParts(zip: ZipArchive, main: string, slots: Placeholders, prepared: Map<string, string>): Promise<number> {
  const body = await zip.readText(main);
  prepared.set(main.toLowerCase(), preparePart(body, main, slots));
  for (const rel of (await readRels(zip, main)).values()) {
    if (rel.external || !/\/(?:footnotes|endnotes)$/.test(rel.type) || !zip.has(rel.target)) continue;
    prepared.set(rel.target.toLowerCase(), preparePart(await zip.readText(rel.target), rel.target, slots));
  }
  return charsOf(body);
}

/** The charts the placeholders stand for, read from their parts, by slot index. */
async function readCharts(zip: ZipArchive, slots: Placeholders): Promise<Map<number, ChartData>> {
  const charts = new Map<number, ChartData>();
  const relsOf = new Map<string, Map<string, Rel>>();
  for (const [i, slot] of slots.slots.entries()) {
    if (slot.kind !== 'chart') continue;
    let rels = relsOf.get(slot.part);
    if (!rels) relsOf.set(slot.part, (rels = await readRels(zip, slot.part)));
    const rel = rels.get(slot.rid);
    const chart = rel && rel.type.endsWith('/chart') ? await readChart(zip, rel) : undefined;
    if (chart) charts.set(i, chart);
  }
  return charts;
}

/** A chart inside a table cell: its title, its series names, then a `category: values` line per row. */
function chartInCell(chart: ChartData): string {
  const lines = [chart.title ? `**Chart: ${escapeMd(chart.title)}**` : '**Chart**'];
  const [header, ...rows] = chart.rows;
  if (header) lines.push(header.slice(1).map(escapeMd).join('; '));
  for (const [cat, ...values] of rows) lines.push(`${cat ? `${escapeMd(cat)}: ` : ''}${values.map(escapeMd).join('; ')}`);
  return lines.join('<br>').replace(/\|/g, '\\|');
}

/**
 * Swaps placeholders for what they stand for, line by line: in a table row an equation's pipes
 * are escaped and a chart is written into its cell; elsewhere a chart's blocks follow its line.
 * A line left empty (a chart whose part is missing) goes, with the blank line it leaves over.
 */
function fillPlaceholders(markdown: string, slots: Placeholders, charts: Map<number, ChartData>): string {
  if (slots.slots.length === 0) return markdown;
  const pattern = slots.pattern();
  const out: string[] = [];
  let dropped = false;
  for (const line of markdown.split('\n')) {
    if (!line.includes(slots.stem)) {
      if (line === '' && dropped && out[out.length - 1] === '') continue;
      dropped = false;
      out.push(line);
      continue;
    }
    const inTable = line.startsWith('|');
    const after: string[] = [];
    // A chart leaving the line leaves a NUL (html-to-md strips control characters from its input,
    // so none comes from the document) that takes one of the spaces around it along.
    const filled = line.replace(pattern, (_, n: string) => {
      const slot = slots.slots[Number(n)]!;
      if (slot.kind === 'math') return inTable ? tableCellMath(slot.markdown).replace(/\|/g, '\\|') : slot.markdown;
      const chart = charts.get(Number(n));
      if (inTable) return chart ? chartInCell(chart) : '';
      if (chart) after.push(...chartBlocks(chart));
      return '\u0000';
    }).replace(/ ?\u0000( ?)/g, '$1');
    const blocks = filled.trim() ? [filled.trimEnd(), ...after] : after;
    if (blocks.length === 0) dropped = true;
    else out.push(blocks.join('\n\n'));
  }
  return out.join('\n');
}

/** The mammoth step (a pool thread's, never the event loop's). */
const mammothStep = lazyModule(() => import('./office/docx-mammoth.js'));

const docxConverter: Converter = {
  kind: 'word',
  mediaTypes: DOCX_TYPES,
  extensions: DOCX_EXTENSIONS,

  accepts(peek) {
    return acceptsOoxml(peek, 'word', DOCX_EXTENSIONS, DOCX_TYPES);
  },

  async count(path): Promise<Count> {
    const chars = await withZip(path, async (zip) => bodyChars(zip, await requireOfficeKind(zip, 'word')));
    const pages = pagesOf(chars);
    return { pages, units: pages };
  },

  async convert(path, _options, ctx) {
    ctx.signal.throwIfAborted();
    return withZip(path, async (zip) => {
      const main = await requireOfficeKind(zip, 'word');
      const slots = new Placeholders();
      const prepared = new Map<string, string>();
      const chars = await prepareParts(zip, main, slots, prepared);
      ctx.signal.throwIfAborted();
      let html: string;
      try {
        const { docxToHtml } = await mammothStep();
        html = await docxToHtml(packageFile(zip, prepared), {
          styleMap: STYLE_MAP,
          // Never reads the image: linked (external) images stay unread, embedded ones stay out of the Markdown.
          image: async () => ({ src: 'image' }),
          transformDocument,
        });
      } catch (err) {
        if (err instanceof ApiError) throw err;
        throw new ApiError('invalid_document', `the Word document could not be read: ${(err as Error).message}`);
      }
      ctx.signal.throwIfAborted();
      const charts = await readCharts(zip, slots);
      const { html: body, notes } = extractNotes(html, slots.stem);
      let markdown = writtenHtmlToMarkdown(body).replace(new RegExp(`${slots.stem}N(\\d+)X`, 'g'), '[^$1]');
      if (notes.length > 0) markdown += `\n\n${noteDefinitions(notes)}`;
      markdown = fillPlaceholders(markdown, slots, charts).trim();
      ctx.progress(1, 1);
      return { markdown: markdown === '' ? '' : `${markdown}\n`, pageCount: pagesOf(chars), mime: DOCX_TYPES[0] };
    });
  },
};

/** .docx, and .doc/.odt/.rtf through their .docx twin (legacy/). */
export const wordConverter = withLegacyFormats('word', docxConverter);
