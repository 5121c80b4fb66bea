// docx-xml's one-pass reader gives mammoth the tree mammoth's own reader (xmldom) gives, and
// leaves to that reader whatever is outside its subset.
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { strFromU8, unzipSync } from 'fflate';
import t from 'tap';
import { readXml } from '../../../src/converters/office/docx-xml.js';
import { buildFromBody, buildReport, wPara } from '../../fixtures/build/docx.js';

const require = createRequire(import.meta.url);
// the reader module itself: loading the Word converter's mammoth step replaces only lib/xml's export
const xmldom = require('mammoth/lib/xml/reader') as { readString(xml: string, ns?: Record<string, string>): Promise<unknown> };

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-docx-xml-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const NS: Record<string, string> = {
  'http://schemas.openxmlformats.org/wordprocessingml/2006/main': 'w',
  'http://schemas.openxmlformats.org/officeDocument/2006/relationships': 'r',
  'http://schemas.openxmlformats.org/package/2006/relationships': 'relationships',
  'http://schemas.openxmlformats.org/markup-compatibility/2006': 'mc',
};
const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';

/** What mammoth's own reader makes of the XML: the tree as JSON (key order included), or its error. */
async function viaXmldom(xml: string): Promise<string> {
  try {
    return JSON.stringify(await xmldom.readString(xml, NS));
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
}

t.test('every XML part of real documents reads to the same tree both ways', async (t) => {
  const files = [
    await buildReport(dir, 'report.docx'),
    await buildFromBody(dir, 'body.docx', `${wPara('a &amp; b &lt;c&gt; &#169; &#x1F600; &quot;q&quot;')}<w:p><w:r><w:t xml:space="preserve">  two  spaces </w:t></w:r></w:p>`),
  ];
  let parts = 0;
  for (const file of files) {
    for (const [name, bytes] of Object.entries(unzipSync(readFileSync(file)))) {
      if (!/\.(?:xml|rels)$/.test(name)) continue;
      const xml = strFromU8(bytes).replace(/^\uFEFF/, '');
      const fast = readXml(xml, NS);
      t.ok(fast, `${path.basename(file)} ${name}: read in one pass`);
      t.equal(JSON.stringify(fast), await viaXmldom(xml), `${path.basename(file)} ${name}: same tree`);
      parts++;
    }
  }
  t.ok(parts >= 10, `${parts} parts compared`);
});

const SAME_TREE: Array<[string, string]> = [
  ['entities and character references', `<w:t ${W}>&amp;&lt;&gt;&quot;&apos; &#65;&#x42;&#x1F600; a & b &c d&#; &#X41;</w:t>`],
  ['line ends in text and attributes', `<w:p ${W} w:a="x\r\ny\tz\nq\r"><w:t>one\r\ntwo\rthree\u0085four\u2028five\r\u0085six</w:t></w:p>`],
  ['entities in attribute values after whitespace normalisation', `<w:p ${W} w:a="&#10;&#9;&amp;&quot;" b='single "quoted"' c = "spaced" />`],
  ['comments, CDATA and processing instructions between text', `<?xml version="1.0"?><!-- before --><w:p ${W}>a<!-- c -->b<![CDATA[<dropped>]]>c<?pi data?>d</w:p><!-- after -->`],
  ['default and unmapped namespaces, nested redeclarations', '<root xmlns="urn:a" xmlns:p="urn:b"><p:x p:attr="1" plain="2"><inner xmlns="urn:c" xmlns:p="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><p:t/></inner></p:x><y/></root>'],
  ['namespace declarations kept as attributes, xml:space', `<w:t ${W} xmlns="urn:d" xml:space="preserve"> x </w:t>`],
  ['whitespace between elements', `\n  <w:body ${W}>\n\t<w:p>\n</w:p>\n</w:body>\n\n`],
  ['elements without a namespace', '<a><b c="1"/>text<d></d></a>'],
];

for (const [name, xml] of SAME_TREE) {
  t.test(`${name}: the same tree both ways`, async (t) => {
    const fast = readXml(xml, NS);
    t.ok(fast, 'read in one pass');
    t.equal(JSON.stringify(fast), await viaXmldom(xml));
  });
}

t.test('generated XML of nested namespaces, attributes, text, references and comments reads to the same tree both ways', async (t) => {
  let seed = Number(process.env.DOCX_XML_SEED ?? 42);
  const r = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const TEXT = ['a', ' ', '  x  ', '\t', '\n', '\r\n', '\r', '\u2028', '&amp;', '&lt;&gt;', '&#160;', '&#x20AC;', '&#128512;', ' & ', '&q', 'é', '>', ']]'];
  const el = (depth: number, prefixes: string[]): string => {
    const declared = [...prefixes];
    let attrs = '';
    if (r() < 0.3) {
      const p = pick(['p', 'q', 'w']);
      attrs += ` xmlns:${p}="${pick(['urn:x', 'urn:y', 'http://schemas.openxmlformats.org/wordprocessingml/2006/main'])}"`;
      declared.push(p);
    }
    if (r() < 0.15) attrs += ` xmlns="${pick(['urn:default', 'http://schemas.openxmlformats.org/package/2006/relationships'])}"`;
    const used = new Set<string>();
    for (let i = Math.floor(r() * 3); i > 0; i--) {
      const name = `${r() < 0.5 && declared.length ? `${pick(declared)}:` : ''}${pick(['val', 'id', 'type'])}`;
      if (used.has(name)) continue;
      used.add(name);
      attrs += `${pick([' ', '\n', '\t '])}${name}${pick(['=', ' = '])}${pick([`"${pick(TEXT)}${pick(TEXT)}"`.replace(/"([^"]*)"/, (_, v: string) => `"${v.replace(/[<"]/g, '')}"`), "'v'"])}`;
    }
    const name = `${r() < 0.6 && declared.length ? `${pick(declared)}:` : ''}${pick(['p', 'r', 't', 'tbl'])}`;
    if (depth > 3 || r() < 0.2) return `<${name}${attrs}${pick(['/>', ' />'])}`;
    let body = '';
    for (let i = Math.floor(r() * 4); i > 0; i--) {
      const k = r();
      body += k < 0.4 ? pick(TEXT) : k < 0.5 ? pick(['<!-- c -->', '<![CDATA[x]]>', '<?pi d?>']) : el(depth + 1, declared);
    }
    return `<${name}${attrs}>${body}</${name}${r() < 0.05 ? ' ' : ''}>`;
  };
  let fast = 0;
  const N = Number(process.env.DOCX_XML_N ?? 400);
  for (let i = 0; i < N; i++) {
    // the root declares w (the generator may declare it again: xmldom's part then)
    const xml = `${pick(['', '<?xml version="1.0"?>', '\n'])}${el(0, ['w'])}`.replace(/^((?:<\?xml[^>]*>)?\s*<[^\s/>]+)/, `$1 ${W}`);
    const tree = readXml(xml, NS);
    if (tree) fast++;
    const expected = await viaXmldom(xml);
    // (the XML holds U+2028, which a TAP reader takes for a line end: not in the message)
    if ((tree ? JSON.stringify(tree) : expected) !== expected) t.fail(`document ${i}: ${encodeURI(xml.slice(0, 300))}`);
    else t.pass(`document ${i}`);
  }
  t.ok(fast > N / 2, `${fast} of ${N} read in one pass`);
});

const LEFT_TO_XMLDOM: Array<[string, string]> = [
  ['a DOCTYPE', `<!DOCTYPE w [<!ENTITY e "x">]><w:t ${W}>&e;</w:t>`],
  ['an entity XML does not define', `<w:t ${W}>a&nbsp;b</w:t>`],
  ['an unbound prefix', '<x:a/>'],
  ['an attribute with an unbound prefix', '<a y:b="1"/>'],
  ['a prefix named like an Object property', '<a xmlns:__proto__="urn:x"><__proto__:b/></a>'],
  ['an empty namespace declaration', '<a xmlns:p=""><p:b/></a>'],
  ['an end tag with space before its >', `<w:b ${W}><w:t>a</w:t><w:t>b</w:t ></w:b>`],
  ['mismatched tags', `<w:p ${W}><w:r></w:p></w:r>`],
  ['an unclosed element', `<w:p ${W}><w:r>`],
  ['a repeated attribute', `<w:p ${W} a="1" a="2"/>`],
  ['an unquoted attribute', `<w:p ${W} a=1/>`],
  ['attributes without space between them', `<w:p ${W} a="1"b="2"/>`],
  ['a non-ASCII name', `<w:pé ${W}/>`],
  ['text after the root', `<w:p ${W}/>tail`],
  ['two roots', `<w:p ${W}/><w:p ${W}/>`],
  ['an unclosed comment', `<w:p ${W}><!-- no end</w:p>`],
  ['nothing at all', ''],
];

for (const [name, xml] of LEFT_TO_XMLDOM) {
  t.test(`${name}: left to mammoth's reader`, async (t) => {
    t.equal(readXml(xml, NS), null);
  });
}

t.test("the Word converter's mammoth step answers with mammoth's own reader outside the subset", async (t) => {
  await import('../../../src/converters/office/docx-mammoth.js');
  const patched = require('mammoth/lib/xml') as { readString(xml: string, ns?: Record<string, string>): Promise<unknown> };
  t.not(patched.readString, xmldom.readString, 'the one-pass reader is in front');
  for (const [name, xml] of [...LEFT_TO_XMLDOM, ...SAME_TREE]) {
    let got: string;
    try {
      got = JSON.stringify(await patched.readString(xml, NS));
    } catch (err) {
      got = `error: ${(err as Error).message}`;
    }
    t.equal(got, await viaXmldom(xml), name);
  }
});
