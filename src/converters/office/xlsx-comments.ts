// The comments of a worksheet, with their authors: notes (xl/commentsN.xml, the legacy kind,
// whose author is a name in the part's author list) and threaded comments (Excel 365:
// xl/threadedComments/, authors in xl/persons/person.xml, replies linked to their first comment).
// A threaded comment also leaves a legacy note behind for older readers; that copy is dropped.
import type { ZipArchive } from '../shared/zip-limits.js';
import { attr, findAll, kids, localName, readTree, type Rel, type XNode, textOf } from './ooxml.js';
import type { Book } from './xlsx-book.js';
import { parseRef } from './xlsx-sheet.js';

export interface Reply { author: string; text: string }

export interface SheetComment {
  ref: string;
  row: number;
  col: number;
  author: string;
  text: string;
  replies: Reply[];
}

const clean = (s: string): string => s.replace(/\r\n?/g, '\n').replace(/[ \t]+\n/g, '\n').trim();

/** A note's text: its runs, phonetic guides left out. */
function noteText(text: XNode | undefined): string {
  let out = '';
  for (const k of kids(text)) {
    const name = localName(k);
    if (name === 't') out += textOf(k);
    else if (name === 'r') for (const t of kids(k).filter((x) => localName(x) === 't')) out += textOf(t);
  }
  return out;
}

async function notes(zip: ZipArchive, part: string): Promise<SheetComment[]> {
  const tree = await readTree(zip, part);
  const authors = findAll(tree, 'author').map((a) => textOf(a).trim());
  const out: SheetComment[] = [];
  for (const c of findAll(tree, 'comment')) {
    const ref = attr(c, 'ref')?.split(':')[0] ?? '';
    const at = parseRef(ref);
    if (!at) continue;
    const author = authors[Number(attr(c, 'authorId'))] ?? '';
    let text = clean(noteText(kids(c).find((k) => localName(k) === 'text')));
    // Excel starts a note with its author's name in bold: "Alice:\n…".
    if (author && text.startsWith(`${author}:`)) text = text.slice(author.length + 1).trim();
    if (text) out.push({ ref: ref.toUpperCase(), ...at, author, text, replies: [] });
  }
  return out;
}

async function threaded(zip: ZipArchive, part: string, book: Book): Promise<SheetComment[]> {
  const people = new Map<string, string>();
  if (book.personsPart) {
    for (const p of findAll(await readTree(zip, book.personsPart), 'person')) people.set(attr(p, 'id') ?? '', attr(p, 'displayName') ?? '');
  }
  const out: SheetComment[] = [];
  const byId = new Map<string, SheetComment>();
  for (const c of findAll(await readTree(zip, part), 'threadedComment')) {
    const text = clean(textOf(kids(c).find((k) => localName(k) === 'text')));
    const author = people.get(attr(c, 'personId') ?? '') ?? '';
    const parent = byId.get(attr(c, 'parentId') ?? '');
    if (parent) {
      if (text) parent.replies.push({ author, text });
      continue;
    }
    const ref = attr(c, 'ref')?.split(':')[0] ?? '';
    const at = parseRef(ref);
    if (!at) continue;
    const item = { ref: ref.toUpperCase(), ...at, author, text, replies: [] };
    byId.set(attr(c, 'id') ?? '', item);
    out.push(item);
  }
  return out.filter((c) => c.text || c.replies.length > 0);
}

/** A sheet's comments in sheet order (by row, then column). */
export async function readComments(zip: ZipArchive, book: Book, rels: Map<string, Rel>): Promise<SheetComment[]> {
  const parts = (suffix: string): string[] =>
    [...rels.values()].filter((r) => !r.external && r.type.endsWith(suffix) && zip.has(r.target)).map((r) => r.target);
  const threads: SheetComment[] = [];
  for (const part of parts('/threadedComment')) threads.push(...(await threaded(zip, part, book)));
  const threadRefs = new Set(threads.map((c) => c.ref));
  const all = [...threads];
  for (const part of parts('/comments')) all.push(...(await notes(zip, part)).filter((c) => !threadRefs.has(c.ref)));
  return all.sort((a, b) => a.row - b.row || a.col - b.col);
}
