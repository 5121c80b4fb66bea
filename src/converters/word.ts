// Word converter (.docx): mammoth turns the document into HTML, shared/html-to-md turns that
// into Markdown. Word-specific steps around them: the zip is checked under the zip limits before
// mammoth opens it; images become `![alt](image)` placeholders without their bytes ever being
// read (so an image linked to file:///etc/passwd reads nothing); vertically merged table cells
// are repeated down their rows (html-to-md repeats nothing, and would shift the columns);
// footnotes and endnotes become Markdown footnotes `[^n]`, numbered in reading order; comments
// are left out (mammoth's default). Pricing: pages of 3,000 characters of body text.
// .doc, .odt and .rtf arrive here as their .docx twin, made by LibreOffice (legacy/).
import { readFile, stat } from 'node:fs/promises';
import { ApiError } from '../errors.js';
import { acceptsOoxml, decodeXml, requireOfficeKind } from './office/ooxml.js';
import { scanPart } from './office/xml-scan.js';
import { htmlToMarkdown } from './shared/html-to-md.js';
import { DEFAULT_ZIP_LIMITS, withZip, type ZipArchive } from './shared/zip-limits.js';
import type { Converter, Count } from './types.js';
import { withLegacyFormats } from './legacy/index.js';

const DOCX_TYPES = [
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.ms-word.document.macroenabled.12',
] as const;
const DOCX_EXTENSIONS = ['.docx', '.docm'] as const;
const CHARS_PER_PAGE = 3000;

const STYLE_MAP = ["p[style-name='Title'] => h1:fresh", "p[style-name='Subtitle'] => p:fresh"];

/** Characters of body text (w:t runs of the main part), streamed: no conversion involved. */
async function bodyChars(zip: ZipArchive, mainPart: string, signal?: AbortSignal): Promise<number> {
  let chars = 0;
  for await (const m of scanPart(zip, mainPart, /<w:t(?:\s[^<>]*)?>([^<]*)<\/w:t>/g, signal)) chars += decodeXml(m[1]!).length;
  return chars;
}

const pagesOf = (chars: number): number => Math.max(1, Math.ceil(chars / CHARS_PER_PAGE));

interface MammothCell { type: 'tableCell'; children: unknown[]; colSpan: number; rowSpan: number }
interface MammothElement { type: string; children?: MammothElement[] }

/** Repeats each row-spanning cell into the rows it spans, at its grid column. */
function expandRowSpans(element: MammothElement): MammothElement {
  for (const c of element.children ?? []) expandRowSpans(c);
  if (element.type !== 'table') return element;
  let pending = new Map<number, { cell: MammothCell; left: number }>();
  for (const row of element.children ?? []) {
    if (row.type !== 'tableRow' || !row.children) continue;
    const out: MammothElement[] = [];
    const next = new Map<number, { cell: MammothCell; left: number }>();
    let col = 0;
    const place = (at: number): void => {
      const p = pending.get(at)!;
      pending.delete(at);
      out.push(p.cell as unknown as MammothElement);
      if (p.left > 1) next.set(at, { cell: p.cell, left: p.left - 1 });
      col = at + p.cell.colSpan;
    };
    for (const raw of row.children) {
      while (pending.has(col)) place(col);
      const cell = raw as unknown as MammothCell;
      if (cell.type === 'tableCell' && cell.rowSpan > 1) {
        next.set(col, { cell: { ...cell, rowSpan: 1 }, left: cell.rowSpan - 1 });
        cell.rowSpan = 1;
      }
      out.push(raw);
      col += cell.type === 'tableCell' ? cell.colSpan : 1;
    }
    for (const at of [...pending.keys()].filter((k) => k >= col).sort((a, b) => a - b)) place(at);
    row.children = out;
    pending = next;
  }
  return element;
}

const NOTE_TOKEN = (n: number): string => `DOCPIPENOTE${n}X`;

/** Moves mammoth's note list out of the HTML: references become tokens, bodies definitions. */
function extractNotes(html: string): { html: string; notes: string[] } {
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
      return NOTE_TOKEN(notes.length);
    },
  );
  return { html: body, notes };
}

function noteDefinitions(notes: string[]): string {
  return notes
    .map((body, i) => {
      const md = htmlToMarkdown(body).trim();
      return `[^${i + 1}]: ${md.replace(/\n/g, '\n    ').replace(/\n {4}(?=\n)/g, '\n')}`;
    })
    .join('\n');
}

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
    // mammoth opens the zip itself: it gets the file only once every entry has inflated within limits.
    const chars = await withZip(path, async (zip) => {
      const main = await requireOfficeKind(zip, 'word');
      await zip.verifyAll(ctx.signal);
      return bodyChars(zip, main, ctx.signal);
    });
    if ((await stat(path)).size > DEFAULT_ZIP_LIMITS.maxTotalBytes) {
      throw new ApiError('invalid_document', 'the document is larger than a Word document can be converted at');
    }
    ctx.signal.throwIfAborted();
    let html: string;
    try {
      // loaded on first use: only where conversions run (a pool thread), never by the event loop
      const { default: mammoth } = await import('mammoth');
      const result = await mammoth.convertToHtml({ buffer: await readFile(path) }, {
        styleMap: STYLE_MAP,
        externalFileAccess: false,
        // Never reads the image: linked (external) images stay unread, embedded ones stay out of the Markdown.
        convertImage: mammoth.images.imgElement(async () => ({ src: 'image' })),
        transformDocument: expandRowSpans as (element: unknown) => unknown,
      } as Parameters<typeof mammoth.convertToHtml>[1]);
      html = result.value;
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new ApiError('invalid_document', `the Word document could not be read: ${(err as Error).message}`);
    }
    ctx.signal.throwIfAborted();
    const { html: body, notes } = extractNotes(html);
    let markdown = htmlToMarkdown(body).replace(/DOCPIPENOTE(\d+)X/g, '[^$1]');
    if (notes.length > 0) markdown += `\n\n${noteDefinitions(notes)}`;
    ctx.progress(1, 1);
    const pageCount = pagesOf(chars);
    return { markdown: markdown.trim() === '' ? '' : `${markdown.trim()}\n`, pageCount, mime: DOCX_TYPES[0] };
  },
};

/** .docx, and .doc/.odt/.rtf through their .docx twin (legacy/). */
export const wordConverter = withLegacyFormats('word', docxConverter);
