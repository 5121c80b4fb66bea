// The Word converter's mammoth step keeps its parsed style rules between documents: what one
// document brings (its embedded style map) stays with that document.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { wordConverter } from '../../../src/converters/word.js';
import { convertWith } from '../../helpers/convert-ctx.js';
import { buildFromBody, wPara } from '../../fixtures/build/docx.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-docx-mammoth-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const body = '<w:p><w:pPr><w:pStyle w:val="Heading2"/></w:pPr><w:r><w:t>Findings</w:t></w:r></w:p>'
  + '<w:p><w:pPr><w:pStyle w:val="Title"/></w:pPr><w:r><w:t>Big title</w:t></w:r></w:p>'
  + wPara('Plain text.');

t.test("a document's embedded style map applies to that document only, and the fixed rules to every document", async (t) => {
  const mapped = await buildFromBody(dir, 'mapped.docx', body, {
    'mammoth/style-map': "# the document's own rules\np.Heading2 => h4:fresh\n",
  });
  const plain = await buildFromBody(dir, 'plain.docx', body);
  const markdown = async (file: string): Promise<string> => (await convertWith(wordConverter, file)).markdown;
  const withMap = '#### Findings\n\n# Big title\n\nPlain text.\n';
  const withoutMap = '## Findings\n\n# Big title\n\nPlain text.\n';
  t.equal(await markdown(mapped), withMap, 'the embedded rule comes before the defaults');
  t.equal(await markdown(plain), withoutMap, 'the next document gets the default rules, and our Title rule');
  t.equal(await markdown(mapped), withMap, 'the same document again');
  t.equal(await markdown(plain), withoutMap, 'and the plain one again');
});
