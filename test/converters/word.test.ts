import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { wordConverter } from '../../src/converters/word.js';
import type { Peek } from '../../src/converters/types.js';
import { convertWith, peekOf } from '../helpers/convert-ctx.js';
import { addExternalImage, buildPlain, buildReport } from '../fixtures/build/docx.js';
import { buildDeck } from '../fixtures/build/pptx.js';
import { buildWorkbook } from '../fixtures/build/xlsx.js';
import { entry, writeZip } from '../fixtures/build/zip.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-word-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));


const SECRET = 'TOPSECRET-MARKER-4242';
const secretFile = path.join(dir, 'secret.txt');
writeFileSync(secretFile, `${SECRET}\nroot:x:0:0:root:/root:/bin/bash\n`);

interface Vector {
  name: string;
  build: () => Promise<string>;
  must: string[];
  mustNot: string[];
}

const REPORT_MUST = [
  '# Annual Report\n\nRevenue was **strong** and costs were _modest_.[^1] See [the full report](https://example.com/report).[^2]\n\n## Details\n\n### Background\n\n',
  '1. First step\n   1. Sub step\n2. Second step\n\n- Top bullet\n  - Inner bullet\n    - Innermost bullet\n\n',
  // the vertically merged "North" stays in its first cell; the spans leave their other cells empty
  '| Region | Notes \\| remarks | Score |\n| --- | --- | --- |\n| North | a\\|b | 1 |\n|  | second | 2 |\n| Spanning two columns |  | 3 |\n\n',
  '![Company logo](image)',
  'Text box content',
  'Commented sentence.',
  '[^1]: Source: the annual survey.\n[^2]: Endnote about methods.\n',
];
const NEVER = ['SECRET REVIEWER REMARK', 'base64', 'data:', '↑', 'footnote-ref', 'DOCPIPE', '<img', '<table', '<sup>', 'undefined', 'root:x:0:0'];

const vectors: Vector[] = [
  {
    name: 'a report keeps headings, nested lists, a merged table, emphasis, links, notes and image alt text, and drops comments',
    build: () => buildReport(dir),
    must: REPORT_MUST,
    mustNot: NEVER,
  },
  {
    name: 'an image linked to file:///etc/passwd becomes a placeholder and nothing is read',
    build: async () => addExternalImage(await buildReport(dir, 'base1.docx'), path.join(dir, 'passwd.docx'), 'file:///etc/passwd'),
    must: ['# Annual Report\n\n![Linked picture](image)\n\nRevenue was', ...REPORT_MUST.slice(1)],
    mustNot: [...NEVER, '/etc/passwd'],
  },
  {
    name: 'an image linked to a local secret file, absolute or relative, is not read',
    build: async () => {
      const once = addExternalImage(await buildReport(dir, 'base2.docx'), path.join(dir, 'abs.docx'), `file://${secretFile}`);
      return addExternalImage(once, path.join(dir, 'abs-rel.docx'), '../../../../../../../../..' + secretFile);
    },
    must: ['![Linked picture](image)\n\n![Linked picture](image)'],
    mustNot: [...NEVER, SECRET, secretFile],
  },
];

for (const v of vectors) {
  t.test(v.name, async (t) => {
    const file = await v.build();
    const { markdown } = await convertWith(wordConverter, file);
    for (const s of v.must) t.ok(markdown.includes(s), `has ${JSON.stringify(s)}`);
    for (const s of v.mustNot) t.notOk(markdown.includes(s), `lacks ${JSON.stringify(s)}`);
    t.notMatch(markdown, /\n{3,}|[ \t]+\n|\*\*\s+\*\*/, 'no stray blank lines or trailing spaces');
    t.ok(markdown.length < 2000, `short: ${markdown.length} characters, no embedded image bytes`);
  });
}

const fifo = path.join(dir, 'trap.fifo');
let hasFifo = true;
try {
  execFileSync('mkfifo', [fifo]);
} catch {
  hasFifo = false;
}

t.test('an image linked to a FIFO does not block: the link is never opened', { skip: hasFifo ? false : 'mkfifo is not available' }, async (t) => {
  // Opening a FIFO for reading blocks until a writer comes: any read attempt would hang here.
  const file = addExternalImage(await buildReport(dir, 'base3.docx'), path.join(dir, 'fifo.docx'), `file://${fifo}`);
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    convertWith(wordConverter, file).then((r) => r.markdown),
    new Promise<'hung'>((resolve) => { timer = setTimeout(() => resolve('hung'), 10_000); }),
  ]);
  clearTimeout(timer);
  if (outcome === 'hung') {
    // Release whoever is stuck reading, so the test process can end.
    closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
  }
  t.not(outcome, 'hung', 'the conversion finished without touching the FIFO');
  t.match(String(outcome), /!\[Linked picture\]\(image\)/);
});

t.test('count gives pages of 3,000 characters of body text, at least one', async (t) => {
  const seven = await buildPlain(dir, 'seven-k.docx', Array.from({ length: 7 }, () => 'a'.repeat(1000)));
  t.same(await wordConverter.count(seven, { formats: ['markdown'] }), { pages: 3, units: 3 });
  const exact = await buildPlain(dir, 'six-k.docx', ['b'.repeat(3000), 'c & d'.repeat(600)]);
  t.same(await wordConverter.count(exact, { formats: ['markdown'] }), { pages: 2, units: 2 }, 'entities count as one character');
  const empty = await buildPlain(dir, 'empty.docx', []);
  t.same(await wordConverter.count(empty, { formats: ['markdown'] }), { pages: 1, units: 1 });
  const r = await convertWith(wordConverter, seven);
  t.equal(r.pageCount, 3, 'convert reports the same pages');
  t.equal(r.markdown.split('\n\n').length, 7);
});

t.test('accepts() takes a docx by name, type or content, and refuses a PDF whatever it is called', async (t) => {
  const docx = await buildReport(dir, 'peek.docx');
  t.ok(wordConverter.accepts(peekOf(docx)), 'by name');
  t.ok(wordConverter.accepts(peekOf(docx, '', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document')), 'by type');
  t.ok(wordConverter.accepts(peekOf(docx, 'upload')), 'by the part names in the first bytes');
  const pdf = path.join(dir, 'report.docx');
  writeFileSync(pdf, '%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\n');
  t.notOk(wordConverter.accepts(peekOf(pdf, 'report.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document')));
  const xlsx = await buildWorkbook(dir, 'sheet.xlsx');
  t.notOk(wordConverter.accepts(peekOf(xlsx)), 'an xlsx');
});

t.test('a workbook or a deck renamed .docx is an input_format_mismatch', async (t) => {
  for (const [build, label] of [[() => buildWorkbook(dir, 'w.xlsx'), 'Excel'], [() => buildDeck(dir, 'd.pptx'), 'PowerPoint']] as const) {
    const renamed = path.join(dir, `${label}.docx`);
    writeFileSync(renamed, readFileSync(await build()));
    await t.rejects(convertWith(wordConverter, renamed), { code: 'input_format_mismatch', message: new RegExp(`${label} document, not a Word document`) });
    await t.rejects(wordConverter.count(renamed, { formats: ['markdown'] }), { code: 'input_format_mismatch' });
  }
});

t.test('a zip without a Word body, or with a broken one, is an invalid_document', async (t) => {
  const plain = writeZip(path.join(dir, 'plain.docx'), [entry('readme.txt', 'hello')]);
  await t.rejects(convertWith(wordConverter, plain), { code: 'invalid_document', message: /no word\/document\.xml/ });
  const broken = writeZip(path.join(dir, 'broken.docx'), [
    entry('[Content_Types].xml', '<Types/>'),
    entry('word/document.xml', '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p>'),
  ]);
  await t.rejects(convertWith(wordConverter, broken), { code: 'invalid_document' });
});

t.test('a cancelled conversion does not run mammoth', async (t) => {
  const file = await buildReport(dir, 'abort.docx');
  const ac = new AbortController();
  ac.abort(new Error('cancelled by test'));
  await t.rejects(convertWith(wordConverter, file, {}, { signal: ac.signal }), { message: 'cancelled by test' });
});
