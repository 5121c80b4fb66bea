import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CheckBox, Document, Packer, Paragraph, Table, TableCell, TableRow, TextRun } from 'docx';
import { ChartRun } from 'docx/charts';
import t from 'tap';
import { wordConverter } from '../../src/converters/word.js';
import { convertWith } from '../helpers/convert-ctx.js';
import { buildFromBody, wPara } from '../fixtures/build/docx.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-word-drawings-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const convert = async (file: string): Promise<string> => (await convertWith(wordConverter, file)).markdown;

async function docWith(name: string, ...children: Array<Table | Paragraph>): Promise<string> {
  const file = path.join(dir, name);
  writeFileSync(file, await Packer.toBuffer(new Document({ sections: [{ children }] })));
  return file;
}

t.test('a chart in a Word file becomes its title and its data table, where it stands', async (t) => {
  const chart = new ChartRun({
    type: 'line', title: 'Monthly sales', categories: ['Jan', 'Feb', 'Mar'],
    series: [{ name: 'North', values: [10, 12.5, 9] }, { name: 'South', values: [7, 8, 11] }],
  });
  const file = await docWith('chart.docx', new Paragraph('Sales went up.'), new Paragraph({ children: [chart] }), new Paragraph('Then down.'));
  t.equal(await convert(file), [
    'Sales went up.',
    '',
    '**Chart: Monthly sales**',
    '',
    '|  | North | South |',
    '| --- | --- | --- |',
    '| Jan | 10 | 7 |',
    '| Feb | 12.5 | 8 |',
    '| Mar | 9 | 11 |',
    '',
    'Then down.',
    '',
  ].join('\n'));
});

t.test('a chart in a table cell is written into its cell', async (t) => {
  const chart = new ChartRun({ type: 'column', title: 'Q|A', categories: ['Yes', 'No'], series: [{ name: 'Votes', values: [3, 1] }] });
  const table = new Table({
    rows: [
      new TableRow({ children: [new TableCell({ children: [new Paragraph('Poll')] }), new TableCell({ children: [new Paragraph('Result')] })] }),
      new TableRow({ children: [new TableCell({ children: [new Paragraph('Lunch')] }), new TableCell({ children: [new Paragraph({ children: [chart] })] })] }),
    ],
  });
  t.equal(await convert(await docWith('chart-cell.docx', table)),
    '| Poll | Result |\n| --- | --- |\n| Lunch | **Chart: Q\\|A**<br>Votes<br>Yes: 3<br>No: 1 |\n');
});

t.test('a chart whose part is missing leaves neither a placeholder nor a gap', async (t) => {
  const drawing = '<w:drawing><wp:inline><wp:extent cx="1" cy="1"/><wp:docPr id="9" name="Chart"/>'
    + '<a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/chart">'
    + '<c:chart xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart" r:id="rIdMissing"/></a:graphicData></a:graphic></wp:inline></w:drawing>';
  const body = `${wPara('Before.')}<w:p><w:r>${drawing}</w:r></w:p><w:p><w:r><w:t xml:space="preserve">Inline </w:t></w:r><w:r>${drawing}</w:r><w:r><w:t xml:space="preserve"> chart.</w:t></w:r></w:p>${wPara('After.')}`;
  t.equal(await convert(await buildFromBody(dir, 'missing-chart.docx', body)), 'Before.\n\nInline chart.\n\nAfter.\n');
});

const A = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"';
/** A DrawingML shape with a text box, as Word 2010+ writes it (wps:txbx). */
const wpsShape = (id: number, inner: string): string =>
  `<w:drawing><wp:anchor distT="0" distB="0" distL="0" distR="0" simplePos="0" relativeHeight="${id}" behindDoc="0" locked="0" layoutInCell="1" allowOverlap="1">`
  + '<wp:simplePos x="0" y="0"/><wp:positionH relativeFrom="column"><wp:posOffset>0</wp:posOffset></wp:positionH>'
  + '<wp:positionV relativeFrom="paragraph"><wp:posOffset>0</wp:posOffset></wp:positionV><wp:extent cx="1828800" cy="914400"/>'
  + `<wp:wrapSquare wrapText="bothSides"/><wp:docPr id="${id}" name="Text Box ${id}"/><wp:cNvGraphicFramePr/>`
  + `<a:graphic ${A}><a:graphicData uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape">`
  + `${inner}</a:graphicData></a:graphic></wp:anchor></w:drawing>`;
const wsp = (paras: string): string => `<wps:wsp><wps:cNvSpPr txBox="1"/><wps:spPr/><wps:txbx><w:txbxContent>${paras}</w:txbxContent></wps:txbx><wps:bodyPr/></wps:wsp>`;
const vmlBox = (shape: string, paras: string): string =>
  `<w:pict><v:${shape} style="width:100pt;height:50pt"><v:textbox><w:txbxContent>${paras}</w:txbxContent></v:textbox></v:${shape}></w:pict>`;

t.test('text in text boxes and shapes is kept, after the paragraph that holds them and before the next', async (t) => {
  const body = [
    `<w:p><w:r><w:t>Before the box.</w:t></w:r><w:r>${wpsShape(1, wsp(`${wPara('Inside the shape.')}<w:p><m:oMath><m:sSup><m:e><m:r><m:t>x</m:t></m:r></m:e><m:sup><m:r><m:t>2</m:t></m:r></m:sup></m:sSup></m:oMath></w:p>`))}</w:r></w:p>`,
    wPara('After the box.'),
    // A group of two shapes: their texts in the group's order.
    `<w:p><w:r>${wpsShape(2, `<wpg:wgp><wpg:cNvGrpSpPr/><wpg:grpSpPr/>${wsp(wPara('Group first'))}${wsp(wPara('Group second'))}</wpg:wgp>`)}</w:r></w:p>`,
    // A shape whose fallback is only a picture: the text comes from the shape itself.
    `<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps">${wpsShape(3, wsp(wPara('Choice only text')))}</mc:Choice><mc:Fallback><w:pict/></mc:Fallback></mc:AlternateContent></w:r></w:p>`,
    // Word's usual shape: the same text in the shape and in its VML fallback, kept once.
    `<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps">${wpsShape(4, wsp(wPara('Shared text')))}</mc:Choice><mc:Fallback>${vmlBox('rect', wPara('Shared text'))}</mc:Fallback></mc:AlternateContent></w:r></w:p>`,
    `<w:p><w:r>${vmlBox('oval', wPara('Oval words'))}</w:r></w:p>`,
    wPara('The end.'),
  ].join('');
  const md = await convert(await buildFromBody(dir, 'boxes.docx', body));
  t.equal(md, [
    'Before the box.', 'Inside the shape.', '$x^{2}$', 'After the box.', 'Group first', 'Group second',
    'Choice only text', 'Shared text', 'Oval words', 'The end.',
  ].join('\n\n') + '\n');
});

t.test('checkboxes, as content controls and as legacy form fields, become ☒ and ☐', async (t) => {
  const controls = await docWith('controls.docx',
    new Paragraph({ children: [new CheckBox({ checked: true }), new TextRun(' Milk')] }),
    new Paragraph({ children: [new CheckBox({ checked: false }), new TextRun(' Eggs')] }),
    new Table({ rows: [
      new TableRow({ children: [new TableCell({ children: [new Paragraph('Done')] }), new TableCell({ children: [new Paragraph('Task')] })] }),
      new TableRow({ children: [new TableCell({ children: [new Paragraph({ children: [new CheckBox({ checked: true })] })] }), new TableCell({ children: [new Paragraph('Write')] })] }),
    ] }));
  t.equal(await convert(controls), '☒ Milk\n\n☐ Eggs\n\n| Done | Task |\n| --- | --- |\n| ☒ | Write |\n');

  const legacy = (checkBox: string, label: string): string =>
    `<w:p><w:r><w:fldChar w:fldCharType="begin"><w:ffData><w:name w:val="Check"/><w:enabled/><w:checkBox><w:sizeAuto/>${checkBox}</w:checkBox></w:ffData></w:fldChar></w:r>`
    + '<w:r><w:instrText xml:space="preserve"> FORMCHECKBOX </w:instrText></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>'
    + `<w:r><w:t xml:space="preserve"> ${label}</w:t></w:r></w:p>`;
  const fields = await buildFromBody(dir, 'form-fields.docx', [
    legacy('<w:default w:val="1"/>', 'Bread'),
    legacy('<w:default w:val="0"/>', 'Jam'),
    legacy('<w:default w:val="0"/><w:checked/>', 'Tea'),
  ].join(''));
  t.equal(await convert(fields), '☒ Bread\n\n☐ Jam\n\n☒ Tea\n');
});
