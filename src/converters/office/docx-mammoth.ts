// mammoth's .docx → HTML step, run as mammoth.convertToHtml runs it (embedded style map, document
// reader, transformDocument, document-to-HTML) minus its per-call set-up: convertToHtml parses
// its ~50 default style rules and ours again for every document, here they are parsed once per
// thread and kept. A style map embedded in the document (mammoth's own extension) is still
// parsed per document, and never kept.
// Loading this module also gives mammoth's XML reader (lib/xml's readString, which its docx
// reader calls for every part) docx-xml.ts's one-pass reader in front: the same trees, xmldom
// only for what that reader leaves to it. mammoth serves only the Word converter here.
// This reaches into mammoth's modules (lib/…, which its package exposes): the Word tests run
// through here, so a mammoth release that moves them fails there first.
// Loaded by the Word converter on first use: only where conversions run, never on the event loop.
import { createRequire } from 'node:module';
import { readXml } from './docx-xml.js';

const require = createRequire(import.meta.url);

interface Result<T> { value: T; messages: unknown[] }
interface Options {
  readStyleMap(): string[];
  embeddedStyleMap?: string;
  customStyleMap: string[];
  includeEmbeddedStyleMap: boolean;
  transformDocument(doc: unknown): unknown;
  [key: string]: unknown;
}
type ResultClass = { new<T>(value: T, messages?: unknown[]): Result<T>; combine<T>(results: Array<Result<T>>): Result<T[]> };

const { readOptions } = require('mammoth/lib/options-reader') as { readOptions(options: object): Options };
const docxReader = require('mammoth/lib/docx/docx-reader') as {
  read(file: unknown, input: object, options: Options): Promise<Result<unknown>>;
};
const { readStyleMap: readEmbeddedStyleMap } = require('mammoth/lib/docx/style-map') as {
  readStyleMap(file: unknown): Promise<string | undefined>;
};
const { DocumentConverter } = require('mammoth/lib/document-to-html') as {
  DocumentConverter: new (options: object) => { convertToHtml(doc: unknown): Promise<Result<string>> };
};
const { readStyle } = require('mammoth/lib/style-reader') as { readStyle(rule: string): Result<unknown> };
const { Result } = require('mammoth/lib/results') as { Result: ResultClass };
const images = require('mammoth/lib/images') as { imgElement(f: (image: unknown) => Promise<Record<string, string>>): unknown };
const mammothXml = require('mammoth/lib/xml') as { readString(xml: string, namespaceMap?: Record<string, string>): Promise<unknown> };

const xmldomReader = mammothXml.readString;
mammothXml.readString = (xml, namespaceMap) => {
  const tree = readXml(xml, namespaceMap ?? {});
  return tree ? Promise.resolve(tree) : xmldomReader(xml, namespaceMap);
};

export interface DocxFile {
  exists(name: string): boolean;
  read(name: string, encoding?: string): Promise<string | Uint8Array>;
}

export interface MammothOptions {
  /** Style rules of the converter, before mammoth's defaults (mammoth's styleMap option). */
  styleMap: readonly string[];
  transformDocument(doc: unknown): unknown;
  /** The attributes an image's <img> gets (alt text comes from the document). */
  image(image: unknown): Promise<Record<string, string>>;
}

/** The parsed style rules, by rule text: only the converter's and mammoth's, a fixed set. */
const parsedRules = new Map<string, Result<unknown>>();

function parseStyleMap(rules: readonly string[], embedded: ReadonlySet<string>): Result<unknown[]> {
  const parsed = rules.map((rule) => {
    if (embedded.has(rule)) return readStyle(rule);
    let r = parsedRules.get(rule);
    if (!r) parsedRules.set(rule, (r = readStyle(rule)));
    return r;
  });
  const combined = Result.combine(parsed);
  return new Result(combined.value.filter((mapping) => !!mapping), combined.messages);
}

/** The document as mammoth's HTML (mammoth.convertToHtml's value). */
export async function docxToHtml(file: DocxFile, opts: MammothOptions): Promise<string> {
  const options = readOptions({
    styleMap: [...opts.styleMap],
    externalFileAccess: false,
    convertImage: images.imgElement(opts.image),
    transformDocument: opts.transformDocument,
  });
  options.embeddedStyleMap = await readEmbeddedStyleMap(file);
  const document = (await docxReader.read(file, {}, options)).value;
  const transformed = options.transformDocument(document);
  // Rules that came from the document itself (readStyleMap puts them after ours) are parsed
  // afresh: only the fixed rules are kept between documents.
  const embedded = new Set(options.includeEmbeddedStyleMap
    ? readOptions({ styleMap: options.embeddedStyleMap }).customStyleMap : []);
  const styleMap = parseStyleMap(options.readStyleMap(), embedded);
  const converter = new DocumentConverter({ ...options, styleMap: styleMap.value });
  return (await converter.convertToHtml(transformed)).value;
}
