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
// One pass over the part's tags, each byte copied at most once per enclosing drawing or
// alternate content (nesting capped), so the work is linear in the part's length.
import { randomBytes } from 'node:crypto';
import { mathMarkdown } from './omml.js';
import { parseXml } from './ooxml.js';
import { mathText } from './omml-symbols.js';

export type Slot = { kind: 'math'; markdown: string } | { kind: 'chart'; part: string; rid: string };

/** Placeholder words of one conversion: a random stem makes them words no document holds. */
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
  out: string[];
  /** math: where its opening tag starts in the source. */
  start: number;
  /** drawing: the chart's relationship id, and the text boxes taken out of it. */
  chart?: string;
  boxes?: string[];
  /** alt: its opening tag, the attributes of its first choice, and where the content of that
   *  choice and of its fallback sit in `out`. */
  open?: string;
  choiceTag?: string;
  choice?: [number, number];
  fallback?: [number, number];
}

const attrOf = (attrs: string, name: string): string | undefined => new RegExp(`(?:^|\\s)(?:[\\w.-]+:)?${name}="([^"]*)"`).exec(attrs)?.[1];

/** The part's equations as plain text when their XML cannot be read as a tree. */
function mathFallback(fragment: string, display: boolean): string {
  const text = mathText(fragment.replace(/<[^>]*>/g, '').replace(/&(lt|gt|amp|quot|apos);/g, (_, e: string) => ({ lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" })[e]!)).trim();
  if (!text) return '';
  return display ? `$$${text}$$` : `$${text}$`;
}

export function preparePart(xml: string, partName: string, slots: Placeholders): string {
  if (!WORTH_A_PASS.test(xml)) return xml;
  const head = xml.slice(0, 64 * 1024);
  const nsMatch = WORD_NS.exec(head);
  const w = nsMatch ? (nsMatch[1] ? `${nsMatch[1]}:` : '') : 'w:';
  const v = VML_NS.exec(head)?.[1];
  const run = (text: string): string => `<${w}r><${w}t>${text}</${w}t></${w}r>`;
  const emptyCell = (span: number): string =>
    `<${w}tc><${w}tcPr><${w}gridSpan ${w}val="${Math.min(span, MAX_GRID_SPAN)}"/></${w}tcPr><${w}p/></${w}tc>`;

  const frames: Frame[] = [{ kind: 'root', name: '', depth: 0, out: [], start: 0 }];
  const rows: Array<{ before: number; after: number }> = [];
  const top = (): Frame => frames[frames.length - 1]!;
  const nearest = (kind: Kind): Frame | undefined => {
    for (let i = frames.length - 1; i > 0; i--) if (frames[i]!.kind === kind) return frames[i];
    return undefined;
  };

  const close = (frame: Frame, end: number): void => {
    const parent = top();
    switch (frame.kind) {
      case 'math': {
        const fragment = xml.slice(frame.start, end);
        const display = frame.name.endsWith('oMathPara');
        let markdown: string;
        try {
          markdown = mathMarkdown(parseXml(fragment).find((n) => !('#text' in n)) ?? {});
        } catch {
          markdown = mathFallback(fragment, display);
        }
        if (markdown) parent.out.push(run(slots.add({ kind: 'math', markdown })));
        return;
      }
      case 'txbx':
        // Opened only directly inside a drawing frame, so the parent is that drawing.
        parent.boxes!.push(frame.out.join(''));
        return;
      case 'drawing':
        if (frame.chart !== undefined) {
          parent.out.push(`<${w}t>${slots.add({ kind: 'chart', part: partName, rid: frame.chart })}</${w}t>`);
          return;
        }
        parent.out.push(frame.out.join(''));
        if (frame.boxes && frame.boxes.length > 0) {
          parent.out.push(`<${w}pict><vml:textbox xmlns:vml="urn:schemas-microsoft-com:vml">${frame.boxes.join('')}</vml:textbox></${w}pict>`);
        }
        return;
      case 'alt': {
        const slice = (at?: [number, number]): string => (at ? frame.out.slice(at[0], at[1]).join('') : '');
        const choice = slice(frame.choice);
        const rich = (s: string): boolean => s.includes('txbxContent') || s.includes(slots.stem);
        if (frame.choiceTag !== undefined && rich(choice) && !rich(slice(frame.fallback))) {
          // mammoth reads the fallback only: the choice becomes the fallback, keeping its namespaces.
          const prefix = frame.name.slice(0, frame.name.indexOf(':') + 1);
          const attrs = frame.choiceTag.replace(/\s(?:[\w.-]+:)?Requires="[^"]*"/, '');
          parent.out.push(`${frame.open}<${prefix}Fallback${attrs}>${choice}</${prefix}Fallback></${frame.name}>`);
        } else {
          parent.out.push(frame.out.join(''));
        }
        return;
      }
      default:
        parent.out.push(frame.out.join(''));
    }
  };

  let pos = 0;
  let text = 0;
  const flushText = (upTo: number): void => {
    if (upTo > text && top().kind !== 'math') top().out.push(xml.slice(text, upTo));
    text = upTo;
  };

  while (pos < xml.length) {
    const lt = xml.indexOf('<', pos);
    if (lt < 0) break;
    // Comments, CDATA and processing instructions are text here.
    const special = xml.startsWith('<!--', lt) ? '-->' : xml.startsWith('<![CDATA[', lt) ? ']]>' : xml.startsWith('<?', lt) ? '?>' : undefined;
    if (special) {
      const end = xml.indexOf(special, lt);
      pos = end < 0 ? xml.length : end + special.length;
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
    const [tag, slash, prefix, local, attrs] = m as unknown as [string, string, string, string, string];
    const name = prefix + local;
    const selfClosing = attrs.endsWith('/');
    const frame = top();

    if (frame.kind === 'math') {
      if (name !== frame.name || selfClosing) continue;
      if (!slash) frame.depth++;
      else if (frame.depth > 0) frame.depth--;
      else {
        frames.pop();
        text = tagEnd;
        close(frame, tagEnd);
      }
      continue;
    }

    flushText(lt);
    text = tagEnd;
    let out = tag;
    if (v !== undefined && prefix === `${v}:` && VML_SKIPPED.has(local)) out = `<${slash}${v}:rect${attrs}>`;

    if (slash) {
      if (name === frame.name && frame.kind !== 'root') {
        if (frame.depth > 0) frame.depth--;
        else {
          frames.pop();
          frame.out.push(out);
          close(frame, tagEnd);
          continue;
        }
      }
      if (frame.kind === 'alt' && frame.name.startsWith(prefix)) {
        if (local === 'Choice' && frame.choice && frame.choice[1] < 0) frame.choice[1] = frame.out.length;
        if (local === 'Fallback' && frame.fallback && frame.fallback[1] < 0) frame.fallback[1] = frame.out.length;
      }
      if (name === `${w}tr`) {
        const row = rows.pop();
        if (row && row.after > 0) frame.out.push(emptyCell(row.after));
      }
      frame.out.push(out);
      if (name === `${w}trPr`) {
        const row = rows[rows.length - 1];
        if (row && row.before > 0) {
          frame.out.push(emptyCell(row.before));
          row.before = 0;
        }
      }
      continue;
    }

    if (local === 'chart') {
      const drawing = nearest('drawing');
      if (drawing && drawing.chart === undefined) drawing.chart = attrOf(attrs, 'id');
    }
    if (selfClosing) {
      if ((name === `${w}gridBefore` || name === `${w}gridAfter`) && rows.length > 0) {
        const n = Number.parseInt(attrOf(attrs, 'val') ?? '0', 10) || 0;
        if (n > 0) rows[rows.length - 1]![name === `${w}gridBefore` ? 'before' : 'after'] = n;
      }
      frame.out.push(out);
      continue;
    }

    let kind: Kind | undefined;
    if (local === 'oMathPara' || local === 'oMath') kind = 'math';
    else if (name === `${w}drawing`) kind = 'drawing';
    else if (name === `${w}txbxContent` && frame.kind === 'drawing') kind = 'txbx';
    else if (local === 'AlternateContent') kind = 'alt';
    if (kind && frames.length < MAX_FRAMES) {
      const next: Frame = { kind, name, depth: 0, out: kind === 'math' ? [] : [out], start: lt };
      if (kind === 'drawing') next.boxes = [];
      if (kind === 'alt') next.open = out;
      frames.push(next);
      continue;
    }
    if (name === frame.name) frame.depth++;
    if (name === `${w}tr`) rows.push({ before: 0, after: 0 });
    if (frame.kind === 'alt' && frame.name.startsWith(prefix)) {
      if (local === 'Choice' && frame.choiceTag === undefined) {
        frame.choiceTag = attrs;
        frame.choice = [frame.out.length + 1, -1];
      } else if (local === 'Fallback' && frame.fallback === undefined) {
        frame.fallback = [frame.out.length + 1, -1];
      }
    }
    frame.out.push(out);
  }
  flushText(xml.length);
  // Unclosed elements: whatever is left open goes out as it came (mammoth will refuse the part).
  while (frames.length > 1) {
    const frame = frames.pop()!;
    top().out.push(frame.kind === 'math' ? xml.slice(frame.start) : frame.out.join(''));
  }
  return frames[0]!.out.join('');
}
