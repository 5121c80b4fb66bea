// The XML reader mammoth uses for a .docx's parts, in one pass: a tag at a time, straight into
// mammoth's own element tree, where mammoth's reader has xmldom build a DOM first and then copies
// it into that tree (a third of a report's conversion went there). The tree is the one mammoth's
// reader makes: xmldom's line-end normalisation, its attribute value normalisation and entity
// decoding, names as `prefix:local` from mammoth's namespace map or `{uri}local`, namespace
// declarations kept as attributes, one text node per run of text (comments, CDATA sections and
// processing instructions dropped, the text on either side of them kept apart).
// readXml reads a subset: well-formed XML without a DOCTYPE, names of ASCII letters, digits,
// `_.-` and at most one colon, end tags without space, every prefix bound to a non-empty
// namespace, no entity but the five XML ones and character references. On anything else it returns null and the caller reads
// the part with mammoth's own reader, which accepts or refuses it as it always has.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

interface MammothElement { type: 'element'; name: string; attributes: Record<string, string>; children: MammothNode[] }
type MammothNode = MammothElement | { type: 'text'; value: string };

const { Element } = require('mammoth/lib/xml/nodes') as {
  Element: new (name: string, attributes: Record<string, string>, children: MammothNode[]) => MammothElement;
};

const XML_NS = 'http://www.w3.org/XML/1998/namespace';
const XMLNS_NS = 'http://www.w3.org/2000/xmlns/';
const ENTITIES: Record<string, string> = { amp: '&', apos: "'", gt: '>', lt: '<', quot: '"' };

const NAME = '[A-Za-z_][\\w.-]*(?::[A-Za-z_][\\w.-]*)?';
const START_TAG = new RegExp(`<(${NAME})((?:[ \\t\\n]+${NAME}[ \\t\\n]*=[ \\t\\n]*(?:"[^"]*"|'[^']*'))*)[ \\t\\n]*(/?)>`, 'y');
// An end tag with space before its '>' is left to xmldom: it looks for an element's end as the
// last `</name>` in the part, and with such tags it can see an element as never closed.
const END_TAG = new RegExp(`</(${NAME})>`, 'y');
const ATTRIBUTE = new RegExp(`(${NAME})[ \\t\\n]*=[ \\t\\n]*(?:"([^"]*)"|'([^']*)')`, 'g');
const LINE_ENDS = /[\r\u0085\u2028]/;
const REFERENCE = /&#?\w+;/g;

/** Thrown inside the reader when the XML leaves the subset; never escapes readXml. */
class OutsideSubset extends Error {}

/** xmldom's reading of an entity or character reference (it takes any `&#…;` parseInt reads). */
function reference(ref: string): string {
  const k = ref.slice(1, -1);
  if (Object.hasOwn(ENTITIES, k)) return ENTITIES[k]!;
  if (k.charAt(0) !== '#') throw new OutsideSubset();
  let code = Number.parseInt(k.slice(1).replace('x', '0x'));
  if (code > 0xffff) {
    code -= 0x10000;
    return String.fromCharCode(0xd800 + (code >> 10), 0xdc00 + (code & 0x3ff));
  }
  return String.fromCharCode(code);
}

const decode = (s: string): string => (s.includes('&') ? s.replace(REFERENCE, reference) : s);

interface Frame {
  element: MammothElement;
  qName: string;
  /** Prefix → namespace in scope ('' for the default namespace). */
  ns: Map<string, string>;
}

/** The part's root element as mammoth's reader returns it, or null outside the subset. */
export function readXml(source: string, namespaceMap: Record<string, string>): MammothElement | null {
  try {
    return read(source, namespaceMap);
  } catch (err) {
    if (err instanceof OutsideSubset) return null;
    throw err;
  }
}

function read(input: string, namespaceMap: Record<string, string>): MammothElement | null {
  const xml = LINE_ENDS.test(input) ? input.replace(/\r[\n\u0085]/g, '\n').replace(/[\r\u0085\u2028]/g, '\n') : input;
  const nameOf = (uri: string | undefined, local: string): string => {
    if (!uri) return local;
    const mapped = namespaceMap[uri];
    return mapped ? `${mapped}:${local}` : `{${uri}}${local}`;
  };
  const stack: Frame[] = [];
  let root: MammothElement | null = null;
  const baseScope = new Map<string, string>([['xml', XML_NS]]);
  let pos = 0;
  while (pos < xml.length) {
    const lt = xml.indexOf('<', pos);
    const textEnd = lt < 0 ? xml.length : lt;
    if (textEnd > pos) {
      const text = xml.slice(pos, textEnd);
      const top = stack[stack.length - 1];
      if (top) top.element.children.push({ type: 'text', value: decode(text) });
      else if (/\S/.test(text)) return null;
    }
    if (lt < 0) break;
    const next = xml.charCodeAt(lt + 1);
    if (next === 0x2f /* / */) {
      END_TAG.lastIndex = lt;
      const m = END_TAG.exec(xml);
      const top = stack.pop();
      if (!m || !top || m[1] !== top.qName) return null;
      pos = END_TAG.lastIndex;
      continue;
    }
    if (next === 0x3f /* ? */) {
      const end = xml.indexOf('?>', lt);
      if (end <= lt + 1) return null;
      pos = end + 2;
      continue;
    }
    if (next === 0x21 /* ! */) {
      if (xml.startsWith('<!--', lt)) {
        const end = xml.indexOf('-->', lt + 4);
        if (end < 0) return null;
        pos = end + 3;
      } else if (xml.startsWith('<![CDATA[', lt)) {
        const end = xml.indexOf(']]>', lt + 9);
        if (end < 0) return null;
        pos = end + 3;
      } else {
        return null; // a DOCTYPE, or not XML
      }
      continue;
    }
    START_TAG.lastIndex = lt;
    const m = START_TAG.exec(xml);
    if (!m || (root && stack.length === 0)) return null;
    pos = START_TAG.lastIndex;
    const [, qName, attrText, selfClosing] = m;
    const parentScope = stack.length > 0 ? stack[stack.length - 1]!.ns : baseScope;
    let scope = parentScope;
    const raw: Array<[string, string]> = [];
    if (attrText) {
      const seen = new Set<string>();
      for (const a of attrText.matchAll(ATTRIBUTE)) {
        const name = a[1]!;
        if (seen.has(name)) return null;
        seen.add(name);
        const value = decode((a[2] ?? a[3]!).replace(/[\t\n\r]/g, ' '));
        raw.push([name, value]);
        if (name === 'xmlns' || name.startsWith('xmlns:')) {
          const prefix = name === 'xmlns' ? '' : name.slice(6);
          // (xmldom keeps prefixes as keys of a plain object: one that names an Object property reads otherwise there)
          if (!value || prefix === 'xml' || prefix === 'xmlns' || prefix in Object.prototype) return null;
          if (scope === parentScope) scope = new Map(parentScope);
          scope.set(prefix, value);
        }
      }
    }
    const attributes: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const [name, value] of raw) {
      const colon = name.indexOf(':');
      let key: string;
      if (name === 'xmlns') key = nameOf(XMLNS_NS, 'xmlns');
      else if (colon < 0) key = name;
      else {
        const prefix = name.slice(0, colon);
        const uri = prefix === 'xmlns' ? XMLNS_NS : scope.get(prefix);
        if (!uri) return null;
        key = nameOf(uri, name.slice(colon + 1));
      }
      attributes[key] = value;
    }
    const colon = qName!.indexOf(':');
    let name: string;
    if (colon < 0) name = nameOf(scope.get(''), qName!);
    else {
      const uri = scope.get(qName!.slice(0, colon));
      if (!uri) return null;
      name = nameOf(uri, qName!.slice(colon + 1));
    }
    const element = new Element(name, attributes, []);
    if (stack.length > 0) stack[stack.length - 1]!.element.children.push(element);
    else root = element;
    if (!selfClosing) stack.push({ element, qName: qName!, ns: scope });
  }
  if (stack.length > 0) return null;
  return root;
}
