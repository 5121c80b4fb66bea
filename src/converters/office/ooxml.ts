// What the three Office converters share about OOXML packages: telling docx/xlsx/pptx apart
// (accepts() by magic bytes, convert() by the package's main part), relationships, and an
// order-preserving XML tree with small accessors. Parts are read through ZipArchive only.
import path from 'node:path/posix';
import { XMLParser } from 'fast-xml-parser';
import { ApiError } from '../../errors.js';
import type { Peek } from '../types.js';
import type { ZipArchive } from '../shared/zip-limits.js';

export type OfficeKind = 'word' | 'excel' | 'powerpoint';

const MAIN_PARTS: Record<OfficeKind, string> = {
  word: 'word/document.xml',
  excel: 'xl/workbook.xml',
  powerpoint: 'ppt/presentation.xml',
};
const CONTENT_TYPE_HINT: Record<OfficeKind, RegExp> = {
  word: /wordprocessingml|ms-word/,
  excel: /spreadsheetml|ms-excel/,
  powerpoint: /presentationml|ms-powerpoint/,
};
const LABEL: Record<OfficeKind, string> = { word: 'Word', excel: 'Excel', powerpoint: 'PowerPoint' };

/** A zip (PK\x03\x04) whose name, media type or first entries say it is this kind of package. */
export function acceptsOoxml(peek: Peek, kind: OfficeKind, extensions: readonly string[], mediaTypes: readonly string[]): boolean {
  const b = peek.bytes;
  if (b.length < 4 || b[0] !== 0x50 || b[1] !== 0x4b || b[2] !== 3 || b[3] !== 4) return false;
  const ext = path.extname(peek.name ?? '').toLowerCase();
  if (extensions.includes(ext)) return true;
  if (peek.mime && mediaTypes.includes(peek.mime.split(';')[0]!.trim().toLowerCase())) return true;
  return b.includes(MAIN_PARTS[kind]) || b.includes(`${MAIN_PARTS[kind].split('/')[0]}/`);
}

/** Which Office package this is, from its main part; null when it is no OOXML package at all. */
export async function officeKindOf(zip: ZipArchive): Promise<{ kind: OfficeKind; mainPart: string } | null> {
  if (zip.has('_rels/.rels')) {
    const rels = await readRels(zip, '');
    const main = [...rels.values()].find((r) => r.type.endsWith('/officeDocument') && !r.external);
    if (main && zip.has(main.target)) {
      for (const kind of Object.keys(MAIN_PARTS) as OfficeKind[]) {
        if (key(main.target).startsWith(MAIN_PARTS[kind].split('/')[0]! + '/')) return { kind, mainPart: main.target };
      }
      if (zip.has('[Content_Types].xml')) {
        const types = await zip.readText('[Content_Types].xml');
        for (const kind of Object.keys(MAIN_PARTS) as OfficeKind[]) {
          if (CONTENT_TYPE_HINT[kind].test(types)) return { kind, mainPart: main.target };
        }
      }
    }
  }
  for (const kind of Object.keys(MAIN_PARTS) as OfficeKind[]) {
    if (zip.has(MAIN_PARTS[kind])) return { kind, mainPart: MAIN_PARTS[kind] };
  }
  return null;
}

/** The main part of a package that must be of `kind`; 415 for another Office kind, 422 otherwise. */
export async function requireOfficeKind(zip: ZipArchive, kind: OfficeKind): Promise<string> {
  const found = await officeKindOf(zip);
  if (!found) throw new ApiError('invalid_document', `not a ${LABEL[kind]} document: the zip has no ${MAIN_PARTS[kind]}`);
  if (found.kind !== kind) {
    throw new ApiError('input_format_mismatch', `this is a ${LABEL[found.kind]} document, not a ${LABEL[kind]} document`);
  }
  return found.mainPart;
}

const key = (p: string): string => p.replace(/^\/+/, '').toLowerCase();

export interface Rel {
  type: string;
  /** A part name inside the package, or the raw target when external. */
  target: string;
  external: boolean;
}

/** The relationships of a part ('' = the package), targets resolved to part names. */
export async function readRels(zip: ZipArchive, part: string): Promise<Map<string, Rel>> {
  const dir = path.dirname(part === '' ? 'x' : part);
  const relsName = path.join(dir === '.' ? '' : dir, '_rels', `${part === '' ? '' : path.basename(part)}.rels`);
  const out = new Map<string, Rel>();
  if (!zip.has(relsName)) return out;
  for (const node of findAll(await readTree(zip, relsName), 'Relationship')) {
    const id = attr(node, 'Id');
    const target = attr(node, 'Target');
    if (!id || target === undefined) continue;
    const external = attr(node, 'TargetMode') === 'External';
    const resolved = external ? target : target.startsWith('/')
      ? target.slice(1)
      : path.normalize(path.join(dir === '.' ? '' : dir, safeDecodeUri(target)));
    out.set(id, { type: attr(node, 'Type') ?? '', target: resolved, external });
  }
  return out;
}

function safeDecodeUri(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

// ---- XML: an order-preserving tree from fast-xml-parser, entities decoded on access ----

export type XNode = Record<string, unknown>;

const parser = new XMLParser({
  preserveOrder: true, ignoreAttributes: false, attributeNamePrefix: '', processEntities: false,
  parseTagValue: false, parseAttributeValue: false, trimValues: false, ignoreDeclaration: true, ignorePiTags: true,
});

/** XML parts are parsed whole; past this size a part is not a document anyone wrote by hand. */
const MAX_TREE_BYTES = 64 * 1024 * 1024;

/** Reads and parses one part as a tree (parts that may be huge, like sheets, are streamed instead). */
export async function readTree(zip: ZipArchive, part: string): Promise<XNode[]> {
  const size = zip.entry(part)?.size ?? 0;
  if (size > MAX_TREE_BYTES) throw new ApiError('invalid_document', `${part} is too large (${size} bytes) to read`);
  return parseXml(await zip.readText(part));
}

export function parseXml(xml: string): XNode[] {
  // OOXML never declares a DOCTYPE; refusing one rules out entity-expansion tricks.
  if (/<!DOCTYPE/i.test(xml)) throw new ApiError('invalid_document', 'XML part declares a DOCTYPE');
  try {
    return parser.parse(xml) as XNode[];
  } catch (err) {
    throw new ApiError('invalid_document', `malformed XML part: ${(err as Error).message}`);
  }
}

export function tagOf(node: XNode): string {
  for (const k of Object.keys(node)) if (k !== ':@') return k;
  return '';
}

/** Tag name without its namespace prefix. */
export const localName = (node: XNode): string => tagOf(node).replace(/^[^:]*:/, '');

export function kids(node: XNode | undefined): XNode[] {
  if (!node) return [];
  const v = node[tagOf(node)];
  return Array.isArray(v) ? (v as XNode[]) : [];
}

export function attr(node: XNode | undefined, name: string): string | undefined {
  const a = node?.[':@'] as Record<string, string> | undefined;
  const v = a?.[name];
  return v === undefined ? undefined : decodeXml(v);
}

/** The first direct child with this tag name (prefix included, e.g. 'a:t'). */
export const child = (node: XNode | undefined, tag: string): XNode | undefined => kids(node).find((k) => tagOf(k) === tag);

/** A path of direct children: path(sp, 'p:nvSpPr', 'p:nvPr', 'p:ph'). */
export function pathOf(node: XNode | undefined, ...tags: string[]): XNode | undefined {
  let cur = node;
  for (const t of tags) cur = child(cur, t);
  return cur;
}

/** Every descendant (or the nodes themselves) with this tag, in document order, not looking
 *  inside a match. A tag without a prefix matches under any prefix ('sheet' finds 'x:sheet'). */
export function findAll(nodes: XNode[], tag: string, out: XNode[] = []): XNode[] {
  const anyPrefix = !tag.includes(':');
  for (const n of nodes) {
    if (tagOf(n) === tag || (anyPrefix && localName(n) === tag)) out.push(n);
    else findAll(kids(n), tag, out);
  }
  return out;
}

/** All text under a node (text nodes of any descendant), decoded. */
export function textOf(node: XNode | undefined): string {
  if (!node) return '';
  if ('#text' in node) return decodeXml(String(node['#text']));
  return kids(node).map(textOf).join('');
}

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

export function decodeXml(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (m, e: string) => {
    if (e[0] === '#') {
      const cp = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : '';
    }
    return NAMED[e] ?? m;
  });
}
