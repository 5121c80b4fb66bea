// The domain's shared vocabulary: what a client asks a conversion to do (ConvertRequest, its
// staged sources and options) and the size a source is priced by (Count). Every layer may import
// this file; it imports nothing of the project. Converters implement it (converters/types.ts), the
// server builds requests (server/convert-request.ts), jobs and uploads carry them, billing prices
// them.

export type ConverterKind =
  | 'pdf'
  | 'image'
  | 'word'
  | 'excel'
  | 'powerpoint'
  | 'html'
  | 'url'
  | 'text'
  | 'markdown-html'
  | 'markdown-text';

export type OutputFormat = 'markdown' | 'text' | 'html' | 'pages';

/** Inclusive page ranges, 1-based; `to: null` means "to the last page". */
export interface PageRange {
  from: number;
  to: number | null;
}

export interface ConvertOptions {
  formats: OutputFormat[];
  /** PDF: which pages to convert; undefined = all. */
  pages?: PageRange[];
  quality?: 'fast' | 'standard' | 'max';
  table_mode?: 'fast' | 'accurate';
  figures?: 'placeholder' | 'describe';
  ocr?: boolean;
  image_mode?: 'ocr' | 'understand';
  /** PDF and image OCR: the languages of the text (tesseract's ISO 639-2/T codes); English when
   *  absent. Checked against OCR_LANGUAGES at the edge. */
  languages?: string[];
  /** HTML: the address the document came from, to make relative links absolute. */
  baseUrl?: string;
  /** HTML and URL: keep the page's main content only (Readability); false: the whole document.
   *  Absent: false for HTML; the edge sets true for URL conversions (src/server/convert-request.ts). */
  main_content?: boolean;
}

/** The size of a source in the units its price is counted in (DESIGN.md §3). */
export interface Count {
  /** Pages (PDF pages selected, slides, images/frames, Word pages of 3,000 characters,
   *  Excel sheets, text/HTML: 1). Reported as `pages` in estimates and files. */
  pages: number;
  /** The pricing unit of the kind: PDF pages, images, Word pages, slides, non-empty cells,
   *  bytes (HTML, text, Markdown). */
  units: number;
}

export interface StagedSource {
  name: string;
  mime?: string;
  /** The staged file; empty when `data` holds the bytes. */
  path: string;
  bytes: number;
  /** A Markdown render source sent inline in JSON: kept in memory, never staged on disk. */
  data?: Buffer;
  /** The staged file's first bytes as they were received (up to PEEK_BYTES), so planning
   *  sniffs them without opening the file again. */
  head?: Buffer;
  /** Its last bytes likewise (up to TAIL_BYTES of server/body.ts): a PDF's count reads them. */
  tail?: Buffer;
}

export interface ConvertRequest {
  kind: ConverterKind;
  sources: StagedSource[];
  /** file_/upl_ references, resolved by the uploads/library code. */
  fileRefs: string[];
  uploadRefs: string[];
  options: ConvertOptions;
  metadata: unknown;
  store: boolean;
  /** The client's name for the conversion, when it gave one. */
  name?: string;
}
