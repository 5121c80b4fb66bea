// The image converter (DESIGN.md §9): PNG, JPEG, WebP, GIF, BMP and TIFF to Markdown by OCR.
// sharp prepares each frame for tesseract (EXIF orientation, transparency onto white,
// greyscale, small type upscaled by the measured height of its lines, giant frames scaled
// down). Multi-frame TIFF and GIF give one section per frame, marked `<!-- page N -->` like
// PDF pages.
// `image_mode: ocr` (default) returns the recognised text as paragraphs; `understand` puts a
// description block (format, size, EXIF, dominant colours, what the image looks like) before
// it, written by the configured vision model when there is one (variant ai_enhanced).
// Size guard: the header is read first (no pixels decoded) and frames over MAX_PIXELS or
// MAX_SIDE are refused with invalid_document; sharp's own limitInputPixels backs that up.
// sharp cannot read BMP, so BMP is decoded by mupdf once its header has passed the same guard.
import type { ConvertContext, ConvertOptions, ConvertResult, Converter, Count, Peek } from './types.js';
import { sniff } from './image/format.js';
import { lazyModule } from './shared/lazy-module.js';

/** The module that runs sharp, mupdf and tesseract (a pool thread's). */
const work = lazyModule(() => import('./image/convert.js'));

export const imageConverter: Converter = {
  kind: 'image',
  mediaTypes: ['image/png', 'image/jpeg', 'image/webp', 'image/gif', 'image/bmp', 'image/x-ms-bmp', 'image/tiff'],
  extensions: ['.png', '.jpg', '.jpeg', '.webp', '.gif', '.bmp', '.tif', '.tiff'],

  accepts(peek: Peek): boolean {
    return sniff(peek.bytes) !== null;
  },

  async count(file: string): Promise<Count> {
    try {
      const frames = await (await work()).countFrames(file);
      return { pages: frames, units: frames };
    } catch (err) {
      throw (await work()).asInvalid(err, 'The image could not be read');
    }
  },

  async convert(file: string, options: ConvertOptions, ctx: ConvertContext): Promise<ConvertResult> {
    const { convertImage, asInvalid } = await work();
    try {
      return await convertImage(file, options, ctx);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      throw asInvalid(err, 'The image could not be converted');
    }
  },
};
