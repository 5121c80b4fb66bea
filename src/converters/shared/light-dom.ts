// A small DOM for HTML that a serializer wrote (mammoth's, for the Word converter), so that
// html-to-md need not build a browser-grade DOM (domino) for it. parseWrittenHtml reads a subset:
// the elements below, each where a browser's parser keeps it as written (phrasing inside
// paragraphs and headings, list items directly inside lists, rows inside tables…), attributes
// from a short list, text with the escapes a serializer writes (&amp; &lt; &gt; &quot;). On
// anything else (another element or attribute, a block inside a phrase, a link inside a link,
// an unclosed or misnested tag, a bare '&', a comment) it returns null and the caller parses
// with domino: inside the subset the tree is the one domino builds, down to the tbody a browser
// adds around rows written directly in a table.
// Nodes carry the slice of the DOM interface html-to-md's preparation and the turndown rules read
// (html-tables.ts's DomElement), plus what the light walk (light-turndown.ts) needs.

/** Elements of phrasing content: allowed inside paragraphs, headings and each other. */
const PHRASING = new Set(['A', 'B', 'DEL', 'EM', 'I', 'MARK', 'S', 'SMALL', 'SPAN', 'STRIKE', 'STRONG', 'SUB', 'SUP', 'U']);
const VOID = new Set(['BR', 'IMG']);
const HEADINGS = new Set(['H1', 'H2', 'H3', 'H4', 'H5', 'H6']);
/** What may hold blocks: the body, list items and table cells. */
const FLOW_BLOCKS = new Set(['P', 'UL', 'OL', 'TABLE', ...HEADINGS]);
const SECTIONS = new Set(['THEAD', 'TBODY', 'TFOOT']);
const ATTRIBUTES = new Set(['alt', 'class', 'colspan', 'dir', 'href', 'id', 'lang', 'rowspan', 'src', 'start', 'title']);

/** Whether `child` may sit directly in `parent` with the meaning a browser's parser gives it. */
function fits(parent: LightNode, child: string): boolean {
  const p = parent.nodeName;
  if (p === 'UL' || p === 'OL') return child === 'LI';
  if (p === 'TABLE') return child === 'TR' || SECTIONS.has(child);
  if (SECTIONS.has(p)) return child === 'TR';
  if (p === 'TR') return child === 'TD' || child === 'TH';
  if (child === 'A' && parent.inLink) return false;
  if (PHRASING.has(child) || VOID.has(child)) return true;
  return (p === 'BODY' || p === 'LI' || p === 'TD' || p === 'TH') && FLOW_BLOCKS.has(child);
}

/** Text may sit in these (in a table, outside cells, a browser's parser moves it). */
const holdsText = (el: LightNode): boolean => !(el.nodeName === 'UL' || el.nodeName === 'OL' || el.nodeName === 'TABLE'
  || el.nodeName === 'TR' || SECTIONS.has(el.nodeName));

export class LightNode {
  parentNode: LightNode | null = null;
  firstChild: LightNode | null = null;
  lastChild: LightNode | null = null;
  nextSibling: LightNode | null = null;
  previousSibling: LightNode | null = null;
  /** An A is open here or above (a browser's parser closes a link opened inside a link). */
  inLink = false;
  /** A tbody the parser added around rows written directly in the table; rows that follow join it. */
  implied = false;
  // Set by the light walk, as turndown sets them on the nodes it converts.
  isBlock?: boolean;
  isCode?: boolean;
  isBlank?: boolean;
  flankingWhitespace?: { leading: string; trailing: string };
  private kids: LightNode[] | null = null;
  private elementKids: LightNode[] | null = null;
  private text: string | null = null;

  constructor(
    readonly nodeType: 1 | 3,
    /** Upper-case tag name, or '#text'. */
    readonly nodeName: string,
    /** A text node's text. */
    public data = '',
    private readonly attrs: Map<string, string> | null = null,
  ) {}

  get nodeValue(): string | null {
    return this.nodeType === 3 ? this.data : null;
  }

  get childNodes(): LightNode[] {
    if (!this.kids) {
      this.kids = [];
      for (let c = this.firstChild; c; c = c.nextSibling) this.kids.push(c);
    }
    return this.kids;
  }

  get children(): LightNode[] {
    this.elementKids ??= this.childNodes.filter((c) => c.nodeType === 1);
    return this.elementKids;
  }

  get lastElementChild(): LightNode | null {
    const kids = this.children;
    return kids[kids.length - 1] ?? null;
  }

  /** The text of the node and its descendants; kept once asked (see freeze). */
  get textContent(): string {
    if (this.nodeType === 3) return this.data;
    if (this.text !== null) return this.text;
    let out = '';
    for (let c = this.firstChild; c; c = c.nextSibling) out += c.textContent;
    return out;
  }

  /** From now on the tree's text no longer changes: elements keep their textContent once computed. */
  freeze(): void {
    if (this.nodeType === 3) return;
    let out = '';
    for (let c = this.firstChild; c; c = c.nextSibling) {
      c.freeze();
      out += c.textContent;
    }
    this.text = out;
  }

  getAttribute(name: string): string | null {
    return this.attrs?.get(name) ?? null;
  }

  setAttribute(name: string, value: string): void {
    this.attrs?.set(name, value);
  }

  removeAttribute(name: string): void {
    this.attrs?.delete(name);
  }

  append(child: LightNode): void {
    child.parentNode = this;
    child.previousSibling = this.lastChild;
    if (this.lastChild) this.lastChild.nextSibling = child;
    else this.firstChild = child;
    this.lastChild = child;
    this.kids = null;
    this.elementKids = null;
  }

  /** Takes the node out of its parent. */
  remove(): void {
    const parent = this.parentNode;
    if (!parent) return;
    if (this.previousSibling) this.previousSibling.nextSibling = this.nextSibling;
    else parent.firstChild = this.nextSibling;
    if (this.nextSibling) this.nextSibling.previousSibling = this.previousSibling;
    else parent.lastChild = this.previousSibling;
    parent.kids = null;
    parent.elementKids = null;
    this.parentNode = this.nextSibling = this.previousSibling = null;
  }
}

// A start tag (attributes as a serializer writes them: name="value", escaped), an end tag, or text.
const TOKEN = /<([a-z][a-z0-9]*)((?:\s[a-z][a-z-]*="[^"<>]*")*)\s*(\/?)>|<\/([a-z][a-z0-9]*)>|([^<]+)/y;
const ATTR = /\s([a-z][a-z-]*)="([^"]*)"/g;
const ESCAPES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"' };
const BARE_AMP = /&(?!(?:amp|lt|gt|quot);)/;
const unescape = (s: string): string => (s.includes('&') ? s.replace(/&(?:amp|lt|gt|quot);/g, (e) => ESCAPES[e]!) : s);

/** The body of the document this HTML makes, or null when the HTML is outside the subset. */
export function parseWrittenHtml(html: string): LightNode | null {
  // A browser's parser reads CR LF and CR as LF.
  const source = html.includes('\r') ? html.replace(/\r\n?/g, '\n') : html;
  const body = new LightNode(1, 'BODY', '', new Map());
  const implied: LightNode[] = [];
  let open = body;
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < source.length) {
    const m = TOKEN.exec(source);
    if (!m) return null;
    const [, startName, attrText, selfClosing, endName, text] = m;
    if (text !== undefined) {
      if (BARE_AMP.test(text) || !holdsText(open)) return null;
      open.append(new LightNode(3, '#text', unescape(text)));
    } else if (endName !== undefined) {
      if (open === body || open.nodeName !== endName.toUpperCase()) return null;
      open = open.parentNode!;
      // an implied tbody ends with its table
      if (open.implied) open = open.parentNode!;
    } else {
      const name = startName!.toUpperCase();
      const isVoid = VOID.has(name);
      if ((selfClosing && !isVoid) || !fits(open, name)) return null;
      let attrs: Map<string, string> | null = null;
      if (attrText) {
        attrs = new Map();
        for (const a of attrText.matchAll(ATTR)) {
          const [, key, value] = a;
          if (!ATTRIBUTES.has(key!) || attrs.has(key!) || BARE_AMP.test(value!)) return null;
          attrs.set(key!, unescape(value!));
        }
      }
      const el = new LightNode(1, name, '', attrs ?? new Map());
      el.inLink = open.inLink || name === 'A';
      let parent = open;
      if (open.nodeName === 'TABLE') {
        if (name === 'TR') {
          const last = open.lastChild;
          if (last?.implied) parent = last;
          else {
            parent = new LightNode(1, 'TBODY', '', new Map());
            parent.implied = true;
            implied.push(parent);
            open.append(parent);
          }
        } else if (open.lastChild?.implied) {
          // an explicit section after rows: the implied tbody is over
          open.lastChild.implied = false;
        }
      }
      parent.append(el);
      if (!isVoid) open = el;
    }
  }
  if (open !== body) return null;
  for (const tbody of implied) tbody.implied = false;
  return body;
}
