import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Document, FootnoteReferenceRun, Packer, Paragraph, TextRun } from 'docx';
import { Math as OMath, MathFraction, MathMatrix, MathRun, MathSum } from 'docx/math';
import t from 'tap';
import { wordConverter } from '../../src/converters/word.js';
import { convertWith } from '../helpers/convert-ctx.js';
import { buildFromBody, wPara } from '../fixtures/build/docx.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-word-math-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const convert = async (file: string): Promise<string> => (await convertWith(wordConverter, file)).markdown;
const mr = (text: string): string => `<m:r><m:t>${text}</m:t></m:r>`;
const NO_LEAKS = ['DOCPIPE', '<m:', 'oMath', 'undefined'];

t.test('a fraction, a sum with limits and a matrix made by the docx package become inline LaTeX in their sentences', async (t) => {
  const doc = new Document({
    footnotes: { 1: { children: [new Paragraph({ children: [new TextRun('Where '), new OMath({ children: [new MathRun('n≥1')] }), new TextRun('.')] })] } },
    sections: [{
      children: [
        new Paragraph({ children: [
          new TextRun('The ratio '),
          new OMath({ children: [new MathFraction({ numerator: [new MathRun('a+b')], denominator: [new MathRun('2')] })] }),
          new TextRun(' is the mean.'),
        ] }),
        new Paragraph({ children: [
          new TextRun('The total '),
          new OMath({ children: [new MathSum({ children: [new MathRun('x')], subScript: [new MathRun('i=1')], superScript: [new MathRun('n')] })] }),
          new TextRun(' runs over all items.'),
          new FootnoteReferenceRun(1),
        ] }),
        new Paragraph({ children: [
          new TextRun('The identity '),
          new OMath({ children: [new MathMatrix({ brackets: 'round', rows: [[[new MathRun('1')], [new MathRun('0')]], [[new MathRun('0')], [new MathRun('1')]]] })] }),
        ] }),
      ],
    }],
  });
  const file = path.join(dir, 'package-math.docx');
  writeFileSync(file, await Packer.toBuffer(doc));
  const md = await convert(file);
  t.equal(md, [
    'The ratio $\\frac{a+b}{2}$ is the mean.',
    '',
    'The total $\\sum_{i=1}^{n} x$ runs over all items.[^1]',
    '',
    'The identity $\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}$',
    '',
    '[^1]: Where $n\\geq1$.',
    '',
  ].join('\n'));
});

t.test('a display equation is its own $$ paragraph, between the paragraphs around it', async (t) => {
  const display = `<w:p><m:oMathPara><m:oMathParaPr><m:jc m:val="center"/></m:oMathParaPr><m:oMath>${mr('E=m')}`
    + `<m:sSup><m:e>${mr('c')}</m:e><m:sup>${mr('2')}</m:sup></m:sSup></m:oMath></m:oMathPara></w:p>`;
  const file = await buildFromBody(dir, 'display.docx', `${wPara('Einstein wrote:')}${display}${wPara('and it stuck.')}`);
  t.equal(await convert(file), 'Einstein wrote:\n\n$$E=mc^{2}$$\n\nand it stuck.\n');
});

t.test('an equation in a table cell is converted like any other, its pipes escaped for the table', async (t) => {
  const cell = (inner: string): string => `<w:tc><w:p>${inner}</w:p></w:tc>`;
  const abs = `<m:oMath><m:d><m:dPr><m:begChr m:val="|"/><m:endChr m:val="|"/></m:dPr><m:e>${mr('x')}</m:e></m:d></m:oMath>`;
  const norm = `<m:oMath><m:d><m:dPr><m:begChr m:val="‖"/><m:endChr m:val="‖"/></m:dPr><m:e>${mr('v')}</m:e></m:d></m:oMath>`;
  const sqrt = `<m:oMath><m:rad><m:radPr><m:degHide m:val="1"/></m:radPr><m:deg/><m:e>${mr('2')}</m:e></m:rad></m:oMath>`;
  const table = `<w:tbl><w:tblGrid><w:gridCol/><w:gridCol/></w:tblGrid>`
    + `<w:tr>${cell('<w:r><w:t>Name</w:t></w:r>')}${cell('<w:r><w:t>Formula</w:t></w:r>')}</w:tr>`
    + `<w:tr>${cell('<w:r><w:t>Absolute value</w:t></w:r>')}${cell(abs)}</w:tr>`
    + `<w:tr>${cell('<w:r><w:t>Norm</w:t></w:r>')}${cell(norm)}</w:tr>`
    + `<w:tr>${cell('<w:r><w:t>Root</w:t></w:r>')}${cell(`<w:r><w:t xml:space="preserve">about </w:t></w:r>${sqrt}`)}</w:tr></w:tbl>`;
  const md = await convert(await buildFromBody(dir, 'table-math.docx', table));
  // A backslash before a pipe would end the cell: the norm's \| is written \Vert.
  t.equal(md, '| Name | Formula |\n| --- | --- |\n| Absolute value | $\\left\\| x \\right\\|$ |\n'
    + '| Norm | $\\left\\Vert v \\right\\Vert$ |\n| Root | about $\\sqrt{2}$ |\n');
});

t.test('equation text never disappears: unknown elements keep their text, and math nested too deep keeps it past the depth followed', async (t) => {
  const unknown = `<w:p><w:r><w:t xml:space="preserve">Odd: </w:t></w:r><m:oMath>${mr('a')}<m:future><m:e>${mr('β')}</m:e></m:future>${mr('c')}</m:oMath></w:p>`;
  let deep = mr('z');
  for (let i = 0; i < 500; i++) deep = `<m:f><m:num>${mr(`a${i}`)}</m:num><m:den>${deep}</m:den></m:f>`;
  const md = await convert(await buildFromBody(dir, 'fallback.docx', `${unknown}<w:p><m:oMath>${deep}</m:oMath></w:p>`));
  t.ok(md.startsWith('Odd: $a\\beta c$\n\n$\\frac{a499}{\\frac{a498}{'), md.slice(0, 80));
  // past the depth followed, the rest of the equation is its text, in order
  t.match(md, /\{a\d+a\d+[a\d]*a1a0z\}+\$\n$/);
  for (const s of NO_LEAKS) t.notOk(md.includes(s), `lacks ${s}`);
});

t.test('a tracked deletion inside an equation is left out, as deleted text is', async (t) => {
  const body = `<w:p><m:oMath>${mr('x=')}<w:del w:id="1" w:author="A"><m:r><m:t>old</m:t></m:r></w:del>${mr('1')}</m:oMath></w:p>`
    + `<w:p><w:del w:id="2" w:author="A"><m:oMath>${mr('gone')}</m:oMath></w:del><w:r><w:t>kept</w:t></w:r></w:p>`;
  t.equal(await convert(await buildFromBody(dir, 'deleted.docx', body)), '$x=1$\n\nkept\n');
});

t.test('text that looks like a placeholder is left as it is', async (t) => {
  const body = `${wPara('DOCPIPEAAAAAAAA0X and DOCPIPENOTE1X')}<w:p><m:oMath>${mr('y')}</m:oMath></w:p>`;
  t.equal(await convert(await buildFromBody(dir, 'lookalike.docx', body)), 'DOCPIPEAAAAAAAA0X and DOCPIPENOTE1X\n\n$y$\n');
});
