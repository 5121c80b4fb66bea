import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Document, Packer, Paragraph, Table, TableCell, TableRow } from 'docx';
import t from 'tap';
import { wordConverter } from '../../src/converters/word.js';
import { convertWith } from '../helpers/convert-ctx.js';
import { buildFromBody, wPara } from '../fixtures/build/docx.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-word-tables-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const convert = async (file: string): Promise<string> => (await convertWith(wordConverter, file)).markdown;

type Merge = { span?: number; down?: 'restart' | 'continue' };
const cell = (text: string, m: Merge = {}): TableCell =>
  new TableCell({ children: [new Paragraph(text)], columnSpan: m.span, verticalMerge: m.down });

async function docWith(name: string, ...children: Array<Table | Paragraph>): Promise<string> {
  const file = path.join(dir, name);
  writeFileSync(file, await Packer.toBuffer(new Document({ sections: [{ children }] })));
  return file;
}

t.test('merged cells sit in their rows and columns, each merged text once in its first cell', async (t) => {
  const table = new Table({
    rows: [
      new TableRow({ tableHeader: true, children: [cell('Region'), cell('Q1'), cell('Q2'), cell('Q3')] }),
      new TableRow({ children: [cell('North', { down: 'restart' }), cell('1'), cell('2 and 3', { span: 2 })] }),
      new TableRow({ children: [cell('', { down: 'continue' }), cell('4'), cell('5'), cell('6')] }),
      new TableRow({ children: [cell('South'), cell('7', { down: 'restart' }), cell('8'), cell('9')] }),
      new TableRow({ children: [cell('East'), cell('', { down: 'continue' }), cell('10'), cell('11')] }),
      new TableRow({ children: [cell('Block', { span: 2, down: 'restart' }), cell('x'), cell('y')] }),
      new TableRow({ children: [cell('', { span: 2, down: 'continue' }), cell('z'), cell('w')] }),
      new TableRow({ children: [cell('Total', { span: 3 }), cell('12')] }),
    ],
  });
  t.equal(await convert(await docWith('merged.docx', table)), [
    '| Region | Q1 | Q2 | Q3 |',
    '| --- | --- | --- | --- |',
    '| North | 1 | 2 and 3 |  |',
    '|  | 4 | 5 | 6 |',
    '| South | 7 | 8 | 9 |',
    '| East |  | 10 | 11 |',
    '| Block |  | x | y |',
    '|  |  | z | w |',
    '| Total |  |  | 12 |',
    '',
  ].join('\n'));
});

t.test('a row starting or ending beside the grid (gridBefore, gridAfter) keeps its cells in their columns', async (t) => {
  const tc = (text: string): string => `<w:tc><w:p><w:r><w:t>${text}</w:t></w:r></w:p></w:tc>`;
  const table = '<w:tbl><w:tblGrid><w:gridCol/><w:gridCol/><w:gridCol/></w:tblGrid>'
    + `<w:tr>${tc('A')}${tc('B')}${tc('C')}</w:tr>`
    + `<w:tr><w:trPr><w:gridBefore w:val="1"/></w:trPr>${tc('b1')}${tc('c1')}</w:tr>`
    + `<w:tr><w:trPr><w:gridAfter w:val="2"/></w:trPr>${tc('a2')}</w:tr></w:tbl>`;
  t.equal(await convert(await buildFromBody(dir, 'grid.docx', table)), '| A | B | C |\n| --- | --- | --- |\n|  | b1 | c1 |\n| a2 |  |  |\n');
});

t.test('the first row is the GFM header whether or not it is marked as a header row', async (t) => {
  const plain = new Table({ rows: [new TableRow({ children: [cell('Name'), cell('Age')] }), new TableRow({ children: [cell('Ada'), cell('36')] })] });
  t.equal(await convert(await docWith('plain-header.docx', plain)), '| Name | Age |\n| --- | --- |\n| Ada | 36 |\n');
  const twoHeaders = new Table({
    rows: [
      new TableRow({ tableHeader: true, children: [cell('Person', { span: 2 })] }),
      new TableRow({ tableHeader: true, children: [cell('Name'), cell('Age')] }),
      new TableRow({ children: [cell('Ada'), cell('36')] }),
    ],
  });
  t.equal(await convert(await docWith('two-headers.docx', twoHeaders)), '| Person |  |\n| --- | --- |\n| Name | Age |\n| Ada | 36 |\n',
    'GFM has one header row: the second header row is the first body row');
});

t.test('a table nested in a cell becomes lines of that cell; in a one-cell frame it stays a table', async (t) => {
  const inner = new Table({ rows: [new TableRow({ children: [cell('k1'), cell('v1')] }), new TableRow({ children: [cell('k2'), cell(''), cell('v2')] })] });
  const outer = new Table({
    rows: [
      new TableRow({ children: [cell('Item'), cell('Details')] }),
      new TableRow({ children: [cell('Widget'), new TableCell({ children: [new Paragraph('Specs:'), inner, new Paragraph('End.')] })] }),
    ],
  });
  t.equal(await convert(await docWith('nested.docx', outer)), '| Item | Details |\n| --- | --- |\n| Widget | Specs:<br>k1; v1<br>k2; v2<br>End. |\n');

  const data = new Table({ rows: [new TableRow({ children: [cell('a'), cell('b')] }), new TableRow({ children: [cell('1'), cell('2')] })] });
  const frame = new Table({ rows: [new TableRow({ children: [new TableCell({ children: [new Paragraph('Boxed'), data] })] })] });
  t.equal(await convert(await docWith('framed.docx', frame)), 'Boxed\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n');
});

t.test('a table with rows that are not plain rows still keeps every cell (no merge is guessed)', async (t) => {
  const tc = (text: string, pr = ''): string => `<w:tc>${pr}<w:p>${text ? `<w:r><w:t>${text}</w:t></w:r>` : ''}</w:p></w:tc>`;
  // A bookmark between rows makes mammoth give up on merges: the covered cell stays, empty.
  const table = '<w:tbl><w:tblGrid><w:gridCol/><w:gridCol/></w:tblGrid>'
    + `<w:tr>${tc('H1')}${tc('H2')}</w:tr><w:bookmarkStart w:id="0" w:name="here"/>`
    + `<w:tr>${tc('m', '<w:tcPr><w:vMerge w:val="restart"/></w:tcPr>')}${tc('1')}</w:tr>`
    + `<w:tr>${tc('', '<w:tcPr><w:vMerge/></w:tcPr>')}${tc('2')}</w:tr></w:tbl>`;
  const md = await convert(await buildFromBody(dir, 'odd-rows.docx', `${table}${wPara('after')}`));
  t.ok(md.includes('| H1 | H2 |\n| --- | --- |\n| m | 1 |\n|  | 2 |'), md);
});
