// PowerPoint converter (.pptx): reads the package's XML itself (fflate via ZipArchive, and
// fast-xml-parser). Each slide becomes `<!-- Slide N -->`, its title as `## `, its shapes in
// reading order (text with bullet levels as nested lists, tables, chart titles and data,
// SmartArt text, picture alt text), then the speaker notes under `### Notes:`. `pages` holds one
// Markdown string per slide. Pricing: pages = units = slides listed in presentation.xml.
// .ppt and .odp arrive here as their .pptx twin, made by LibreOffice (legacy/).
import { acceptsOoxml, attr, findAll, readTree, readRels, requireOfficeKind } from './office/ooxml.js';
import { readSlide } from './office/pptx-slide.js';
import { Templates } from './office/pptx-template.js';
import { withZip, type ZipArchive } from './shared/zip-limits.js';
import type { Converter } from './types.js';
import { withLegacyFormats } from './legacy/index.js';

const PPTX_TYPES = [
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  'application/vnd.ms-powerpoint.presentation.macroenabled.12',
] as const;
const PPTX_EXTENSIONS = ['.pptx', '.pptm'] as const;

/** Slide parts in presentation order (p:sldIdLst); ids pointing nowhere are skipped. */
async function slideParts(zip: ZipArchive): Promise<string[]> {
  const main = await requireOfficeKind(zip, 'powerpoint');
  const tree = await readTree(zip, main);
  const rels = await readRels(zip, main);
  const parts: string[] = [];
  for (const id of findAll(tree, 'p:sldId')) {
    const rel = rels.get(attr(id, 'r:id') ?? '');
    if (rel && !rel.external && zip.has(rel.target)) parts.push(rel.target);
  }
  return parts;
}

const pptxConverter: Converter = {
  kind: 'powerpoint',
  mediaTypes: PPTX_TYPES,
  extensions: PPTX_EXTENSIONS,

  accepts(peek) {
    return acceptsOoxml(peek, 'powerpoint', PPTX_EXTENSIONS, PPTX_TYPES);
  },

  async count(path) {
    const slides = await withZip(path, slideParts);
    return { pages: slides.length, units: slides.length };
  },

  async convert(path, _options, ctx) {
    return withZip(path, async (zip) => {
      const slides = await slideParts(zip);
      const templates = new Templates(zip);
      const pages: string[] = [];
      for (const [i, part] of slides.entries()) {
        ctx.signal.throwIfAborted();
        const slide = await readSlide(zip, part, templates);
        const parts = [`<!-- Slide ${i + 1} -->`];
        if (slide.title) parts.push(`## ${slide.title}`);
        parts.push(...slide.blocks);
        if (slide.notesPart) {
          const notes = await readSlide(zip, slide.notesPart, templates);
          if (notes.blocks.length > 0) parts.push('### Notes:', ...notes.blocks);
        }
        pages.push(parts.join('\n\n'));
        ctx.progress(i + 1, slides.length);
      }
      return { markdown: pages.length > 0 ? `${pages.join('\n\n')}\n` : '', pages, pageCount: pages.length, mime: PPTX_TYPES[0] };
    });
  },
};

/** .pptx, and .ppt/.odp through their .pptx twin (legacy/). */
export const powerpointConverter = withLegacyFormats('powerpoint', pptxConverter);
