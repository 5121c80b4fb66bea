// The XML reader mammoth uses for a .docx's parts, in one pass: a tag at a time, straight into
// mammoth's own element tree, where mammoth's reader has xmldom build a DOM first and then copies
// it into that tree (a third of a report's conversion went there). The tree is the one mammoth's
// reader makes: xmldom's line-end normalisation, its attribute value normalisation and entity
// decoding, names as `prefix:local` from mammoth's namespace map or `{uri}local`, namespace
// declarations kept as attributes, one text node per run of text (comments, CDATA sections and
// processing instructions dropped, the text on either side of them kept apart).
// readXml reads a subset: well-formed XML without a DOCTYPE, names of ASCII letters, digits,
// `_.-` and at most one colon, end tags without space, every prefix bound to a non-empty
// namespace, no entity but the five XML ones and character references. On anything else it
// returns null and the caller reads the part with mammoth's own reader, which accepts or
// refuses it as it always has.
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

/** The prefixes in scope ('' for the default namespace) and, by qualified name, the names
 *  mammoth gives the elements and the attributes of that scope. */
interface Scope {
  ns: Map<string, string>;
  elements: Map<string, string>;
  attributes: Map<string, string>;
}

interface Frame {
  element: MammothElement;
  qName: string;
  scope: Scope;
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
  /** mammoth's name for an element or attribute of this scope. */
  const named = (scope: Scope, qName: string, element: boolean): string => {
    const names = element ? scope.elements : scope.attributes;
    let name = names.get(qName);
    if (name !== undefined) return name;
    const colon = qName.indexOf(':');
    if (colon < 0) name = element ? nameOf(scope.ns.get(''), qName) : qName === 'xmlns' ? nameOf(XMLNS_NS, 'xmlns') : qName;
    else {
      const prefix = qName.slice(0, colon);
      const uri = !element && prefix === 'xmlns' ? XMLNS_NS : scope.ns.get(prefix);
      if (!uri) throw new OutsideSubset();
      name = nameOf(uri, qName.slice(colon + 1));
    }
    names.set(qName, name);
    return name;
  };
  const stack: Frame[] = [];
  let root: MammothElement | null = null;
  const baseScope: Scope = { ns: new Map([['xml', XML_NS]]), elements: new Map(), attributes: new Map() };
  let pos = 0;
  while (pos < xml.length) {
    const lt = xml.indexOf('<', pos);
    const textEnd = lt < 0 ? xml.length : lt;
    const top = stack.length > 0 ? stack[stack.length - 1]! : null;
    if (textEnd > pos) {
      const text = xml.slice(pos, textEnd);
      if (top) top.element.children.push({ type: 'text', value: decode(text) });
      else if (/\S/.test(text)) return null;
    }
    if (lt < 0) break;
    const next = xml.charCodeAt(lt + 1);
    if (next === 0x2f /* / */) {
      END_TAG.lastIndex = lt;
      const m = END_TAG.exec(xml);
      if (!m || !top || m[1] !== top.qName) return null;
      stack.pop();
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
    if (!m || (root && !top)) return null;
    pos = START_TAG.lastIndex;
    const qName = m[1]!;
    const attrText = m[2]!;
    let scope = top ? top.scope : baseScope;
    const attributes: Record<string, string> = Object.create(null) as Record<string, string>;
    if (attrText) {
      if (attrText.includes('xmlns')) scope = declare(attrText, scope);
      const names: string[] = [];
      ATTRIBUTE.lastIndex = 0;
      for (let a = ATTRIBUTE.exec(attrText); a; a = ATTRIBUTE.exec(attrText)) {
        const name = a[1]!;
        if (names.includes(name)) return null;
        names.push(name);
        attributes[named(scope, name, false)] = attributeValue(a[2] ?? a[3]!);
      }
    }
    const element = new Element(named(scope, qName, true), attributes, []);
    if (top) top.element.children.push(element);
    else root = element;
    if (!m[3]) stack.push({ element, qName, scope });
  }
  if (stack.length > 0) return null;
  return root;
}

/** xmldom's attribute value: tabs and line ends as spaces, then references decoded. */
function attributeValue(raw: string): string {
  return decode(raw.replace(/[\t\n\r]/g, ' '));
}

/** The scope of an element that declares namespaces (xmlns, xmlns:p), inside `parent`. */
function declare(attrText: string, parent: Scope): Scope {
  let scope = parent;
  ATTRIBUTE.lastIndex = 0;
  for (let a = ATTRIBUTE.exec(attrText); a; a = ATTRIBUTE.exec(attrText)) {
    const name = a[1]!;
    if (name !== 'xmlns' && !name.startsWith('xmlns:')) continue;
    const prefix = name === 'xmlns' ? '' : name.slice(6);
    const value = attributeValue(a[2] ?? a[3]!);
    // (xmldom keeps prefixes as keys of a plain object: one that names an Object property reads otherwise there)
    if (!value || prefix === 'xml' || prefix === 'xmlns' || prefix in Object.prototype) throw new OutsideSubset();
    if (scope === parent) scope = { ns: new Map(parent.ns), elements: new Map(), attributes: new Map() };
    scope.ns.set(prefix, value);
  }
  return scope;
}
