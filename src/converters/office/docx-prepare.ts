// Rewrites a WordprocessingML part (the body, footnotes, endnotes) before mammoth reads it, for
// what mammoth would drop or misplace:
// - equations (m:oMathPara, m:oMath) and charts (a w:drawing holding a c:chart) become a run whose
//   text is a placeholder word; the caller swaps each placeholder for the equation's LaTeX or the
//   chart's table once the Markdown is made (a word of letters and digits passes through mammoth
//   and turndown untouched, wherever it is: paragraph, list item, table cell, footnote);
// - the text boxes of DrawingML shapes (wps:txbx), which mammoth does not read, move into a VML
//   text box (w:pict), which it does, right after their drawing; an mc:AlternateContent whose
//   fallback lost the text box or equation of its first choice is given that choice instead;
// - VML shapes mammoth skips (ovals, arcs, lines…) are read as rectangles, keeping their text;
// - a row's w:gridBefore/w:gridAfter becomes an empty cell of that width, so cells stay in
//   their grid columns.
// One pass over the part's tags (an equation's tree is built during that pass, not parsed
// again), each byte copied at most once per enclosing drawing or alternate content (nesting
// capped), so the work is linear in the part's length.
import { randomBytes } from 'node:crypto';
import { mathMarkdown } from './omml.js';
import type { XNode } from './ooxml.js';

export type Slot = { kind: 'math'; markdown: string } | { kind: 'chart'; part: string; rid: string };

/** Placeholder words of one conversion (word.ts's note references share the stem): a random
 *  stem makes them words no document holds. */
export class Placeholders {
  readonly slots: Slot[] = [];
  readonly stem = `DOCPIPE${Array.from(randomBytes(8), (b) => String.fromCharCode(65 + (b % 26))).join('')}`;

  add(slot: Slot): string {
    this.slots.push(slot);
    return `${this.stem}${this.slots.length - 1}X`;
  }

  /** Matches a placeholder; group 1 is its slot index. */
  pattern(): RegExp {
    return new RegExp(`${this.stem}(\\d+)X`, 'g');
  }
}

/** A part with none of these needs no rewriting (the common case costs one scan). */
const WORTH_A_PASS = /oMath|:chart\b|txbxContent|gridBefore|gridAfter|<\w+:(?:oval|arc|curve|line|polyline)\b/;
const TAG = /<(\/?)((?:[A-Za-z_][\w.-]*:)?)([A-Za-z_][\w.-]*)((?:[^<>"']|"[^"<]*"|'[^'<]*')*)>/y;
const WORD_NS = /xmlns(?::([\w.-]+))?="http:\/\/(?:schemas\.openxmlformats\.org\/wordprocessingml\/2006\/main|purl\.oclc\.org\/ooxml\/wordprocessingml\/main)"/;
const VML_NS = /xmlns:([\w.-]+)="urn:schemas-microsoft-com:vml"/;
const VML_SKIPPED = new Set(['oval', 'arc', 'curve', 'line', 'polyline']);
const MAX_FRAMES = 24;
const MAX_GRID_SPAN = 50;

type Kind = 'root' | 'math' | 'drawing' | 'txbx' | 'alt';

interface Frame {
  kind: Kind;
  /** The element's qualified name; elements of the same name opened inside it are counted in depth. */
  name: string;
  depth: number;
  /** What the frame's content has become so far, and where in the source the rest of it starts:
   *  source is copied in slices, at edits only, not tag by tag. */
  out: string[];
  from: number;
  /** math: the equation's tree as it is read (ooxml.ts's shape), and the open elements' children. */
  tree?: XNode;
  open?: XNode[][];
  /** drawing: the chart's relationship id, and the text boxes taken out of it. */
  chart?: string;
  boxes?: string[];
  /** alt: the attributes of its first choice, and where the content of that choice and of its
   *  fallback sit in `out`. */
  choiceAttrs?: string;
  choice?: [number, number];
  fallback?: [number, number];
}

const ATTR = /([\w.:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
const ID_ATTR = /(?:^|\s)(?:[\w.-]+:)?id="([^"]*)"/;
const VAL_ATTR = /(?:^|\s)(?:[\w.-]+:)?val="([^"]*)"/;

/** An element node as ooxml.ts's trees have it; attribute values stay raw (decoded on access). */
function element(name: string, attrs: string): XNode {
  const node: XNode = { [name]: [] };
  if (attrs.includes('=')) {
    const a: Record<string, string> = {};
    for (const m of attrs.matchAll(ATTR)) a[m[1]!] = m[2] ?? m[3] ?? '';
    node[':@'] = a;
  }
  return node;
}

export function preparePart(xml: string, partName: string, slots: Placeholders): string {
  if (!WORTH_A_PASS.test(xml)) return xml;
  const head = xml.slice(0, 64 * 1024);
  const nsMatch = WORD_NS.exec(head);
  const w = nsMatch ? (nsMatch[1] ? `${nsMatch[1]}:` : '') : 'w:';
  const vml = VML_NS.exec(head)?.[1];
  const W = {
    drawing: `${w}drawing`, txbx: `${w}txbxContent`, tr: `${w}tr`, trPr: `${w}trPr`,
    gridBefore: `${w}gridBefore`, gridAfter: `${w}gridAfter`,
  };
  const run = (text: string): string => `<${w}r><${w}t>${text}</${w}t></${w}r>`;
  const emptyCell = (span: number): string =>
    `<${w}tc><${w}tcPr><${w}gridSpan ${w}val="${Math.min(span, MAX_GRID_SPAN)}"/></${w}tcPr><${w}p/></${w}tc>`;

  const frames: Frame[] = [{ kind: 'root', name: '', depth: 0, out: [], from: 0 }];
  const rows: Array<{ before: number; after: number }> = [];
  const top = (): Frame => frames[frames.length - 1]!;
  const nearest = (kind: Kind): Frame | undefined => {
    for (let i = frames.length - 1; i > 0; i--) if (frames[i]!.kind === kind) return frames[i];
    return undefined;
  };
  /** Copies the frame's source up to `at` into its output. */
  const copy = (frame: Frame, at: number): void => {
    if (at > frame.from) frame.out.push(xml.slice(frame.from, at));
    frame.from = at;
  };
  /** Ends a frame whose source ends at `end`: its parent gets what it became. */
  const close = (frame: Frame, end: number): void => {
    const parent = top();
    parent.from = end;
    switch (frame.kind) {
      case 'math': {
        const markdown = mathMarkdown(frame.tree!);
        if (markdown) parent.out.push(run(slots.add({ kind: 'math', markdown })));
        return;
      }
      case 'txbx':
        // Opened only directly inside a drawing frame, so the parent is that drawing.
        copy(frame, end);
        parent.boxes!.push(frame.out.join(''));
        return;
      case 'drawing':
        if (frame.chart !== undefined) {
          parent.out.push(`<${w}t>${slots.add({ kind: 'chart', part: partName, rid: frame.chart })}</${w}t>`);
          return;
        }
        copy(frame, end);
        parent.out.push(...frame.out);
        if (frame.boxes!.length > 0) {
          parent.out.push(`<${w}pict><vml:textbox xmlns:vml="urn:schemas-microsoft-com:vml">${frame.boxes!.join('')}</vml:textbox></${w}pict>`);
        }
        return;
      case 'alt': {
        copy(frame, end);
        const slice = (at?: [number, number]): string => (at && at[1] >= 0 ? frame.out.slice(at[0], at[1]).join('') : '');
        const choice = slice(frame.choice);
        const rich = (s: string): boolean => s.includes('txbxContent') || s.includes(slots.stem);
        if (frame.choiceAttrs !== undefined && rich(choice) && !rich(slice(frame.fallback))) {
          // mammoth reads the fallback only: the choice becomes the fallback, keeping its namespaces.
          const prefix = frame.name.slice(0, frame.name.indexOf(':') + 1);
          const attrs = frame.choiceAttrs.replace(/\s(?:[\w.-]+:)?Requires="[^"]*"/, '');
          parent.out.push(frame.out[0]!.slice(0, frame.out[0]!.indexOf('>') + 1),
            `<${prefix}Fallback${attrs}>${choice}</${prefix}Fallback></${frame.name}>`);
        } else {
          parent.out.push(...frame.out);
        }
        return;
      }
      default:
        copy(frame, end);
        parent.out.push(...frame.out);
    }
  };

  let pos = 0;
  while (pos < xml.length) {
    const lt = xml.indexOf('<', pos);
    if (lt < 0) break;
    const frame = top();
    const c = xml.charCodeAt(lt + 1);
    if (c === 0x21 /* ! */ || c === 0x3f /* ? */) {
      // Comments, CDATA and processing instructions are copied with the text around them,
      // except inside an equation, where they are dropped.
      const special = xml.startsWith('<!--', lt) ? '-->' : xml.startsWith('<![CDATA[', lt) ? ']]>' : c === 0x3f ? '?>' : '>';
      const end = xml.indexOf(special, lt);
      pos = end < 0 ? xml.length : end + special.length;
      if (frame.kind === 'math') {
        mathText(frame, lt);
        frame.from = pos;
      }
      continue;
    }
    TAG.lastIndex = lt;
    const m = TAG.exec(xml);
    if (!m) {
      pos = lt + 1;
      continue;
    }
    const tagEnd = TAG.lastIndex;
    pos = tagEnd;
    const slash = m[1] === '/';
    const prefix = m[2]!;
    const local = m[3]!;
    const attrs = m[4]!;
    const name = prefix + local;
    const selfClosing = attrs.endsWith('/');

    if (frame.kind === 'math') {
      mathText(frame, lt);
      frame.from = tagEnd;
      const open = frame.open!;
      if (slash) {
        if (open.length > 1) open.pop();
        else {
          frames.pop();
          close(frame, tagEnd);
        }
      } else {
        const node = element(name, selfClosing ? attrs.slice(0, -1) : attrs);
        open[open.length - 1]!.push(node);
        if (!selfClosing) open.push(node[name] as XNode[]);
      }
      continue;
    }

    if (vml !== undefined && local.length <= 8 && VML_SKIPPED.has(local) && prefix === `${vml}:`) {
      copy(frame, lt);
      frame.out.push(`<${slash ? '/' : ''}${vml}:rect${attrs}>`);
      frame.from = tagEnd;
    }

    if (slash) {
      if (name === frame.name && frame.kind !== 'root') {
        if (frame.depth > 0) frame.depth--;
        else {
          frames.pop();
          close(frame, tagEnd);
          continue;
        }
      }
      if (frame.kind === 'alt' && (local === 'Choice' || local === 'Fallback') && frame.name.startsWith(prefix)) {
        const at = local === 'Choice' ? frame.choice : frame.fallback;
        if (at && at[1] < 0) {
          copy(frame, lt);
          at[1] = frame.out.length;
        }
      } else if (name === W.tr) {
        const row = rows.pop();
        if (row && row.after > 0) {
          copy(frame, lt);
          frame.out.push(emptyCell(row.after));
        }
      } else if (name === W.trPr) {
        const row = rows[rows.length - 1];
        if (row && row.before > 0) {
          copy(frame, tagEnd);
          frame.out.push(emptyCell(row.before));
          row.before = 0;
        }
      }
      continue;
    }

    if (local === 'chart') {
      const drawing = nearest('drawing');
      if (drawing && drawing.chart === undefined) drawing.chart = ID_ATTR.exec(attrs)?.[1];
    }
    if (selfClosing) {
      if ((name === W.gridBefore || name === W.gridAfter) && rows.length > 0) {
        const n = Number.parseInt(VAL_ATTR.exec(attrs)?.[1] ?? '0', 10) || 0;
        if (n > 0) rows[rows.length - 1]![name === W.gridBefore ? 'before' : 'after'] = n;
      }
      continue;
    }

    let kind: Kind | undefined;
    if (local === 'oMathPara' || local === 'oMath') kind = 'math';
    else if (name === W.drawing) kind = 'drawing';
    else if (name === W.txbx && frame.kind === 'drawing') kind = 'txbx';
    else if (local === 'AlternateContent') kind = 'alt';
    if (kind && frames.length < MAX_FRAMES) {
      copy(frame, lt);
      const next: Frame = { kind, name, depth: 0, out: [], from: lt };
      if (kind === 'math') {
        next.tree = element(name, attrs);
        next.open = [next.tree[name] as XNode[]];
        next.from = tagEnd;
      }
      if (kind === 'drawing') next.boxes = [];
      frames.push(next);
      continue;
    }
    if (name === frame.name) frame.depth++;
    if (name === W.tr) rows.push({ before: 0, after: 0 });
    if (frame.kind === 'alt' && (local === 'Choice' || local === 'Fallback') && frame.name.startsWith(prefix)) {
      if (local === 'Choice' && frame.choiceAttrs === undefined) {
        frame.choiceAttrs = attrs;
        copy(frame, tagEnd);
        frame.choice = [frame.out.length, -1];
      } else if (local === 'Fallback' && frame.fallback === undefined) {
        copy(frame, tagEnd);
        frame.fallback = [frame.out.length, -1];
      }
    }
  }
  // Unclosed elements: what is left open goes out as it came (mammoth will refuse the part), an
  // unclosed equation as what was read of it.
  while (frames.length > 1) {
    const frame = frames.pop()!;
    if (frame.kind === 'math') mathText(frame, xml.length);
    close(frame, xml.length);
  }
  copy(frames[0]!, xml.length);
  return frames[0]!.out.join('');

  /** Text read inside an equation, up to `at`, becomes a text node of the open element. */
  function mathText(frame: Frame, at: number): void {
    if (at > frame.from) frame.open![frame.open!.length - 1]!.push({ '#text': xml.slice(frame.from, at) });
  }
}
