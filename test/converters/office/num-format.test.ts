// Number formats: each vector is a format code, a cell value and the text Excel (en-US) shows.
import t from 'tap';
import { builtinFormatCode, compileFormat } from '../../../src/converters/office/num-format.js';

const vectors: Array<[code: string, value: number | string, shown: string]> = [
  // digits, thousands, fixed decimals; rounding half away from zero on 15 significant digits
  ['#,##0.00', 1234567.891, '1,234,567.89'],
  ['#,##0', 0, '0'],
  ['#,##0', -1234.5, '-1,235'],
  ['0.00', 1.005, '1.01'],
  ['0.00', 2.675, '2.68'],
  ['0.00', -0.001, '0.00'],
  ['00000', 123, '00123'],
  ['000-00-0000', 123456789, '123-45-6789'],
  ['#.##', 0.5, '.5'],
  ['0.##', 1, '1.'],
  ['#', 0.4, ''],
  ['0.000', 1.2345678901234567e20, '123456789012346000000.000'],
  // scaling by trailing commas, percentages
  ['#,##0,', 12345678, '12,346'],
  ['0.0,,"M"', 12345678, '12.3M'],
  ['0%', 0.125, '13%'],
  ['0.0%', 0.125, '12.5%'],
  // scientific and engineering notation
  ['0.00E+00', 12345, '1.23E+04'],
  ['0.00E+00', 0.000123, '1.23E-04'],
  ['0.00E+00', 99999, '1.00E+05'],
  ['##0.0E+0', 12345, '12.3E+3'],
  // currency: quoted symbols, [$€-407] tags, sections for negatives, colours ignored
  ['"$"#,##0.00_);[Red]("$"#,##0.00)', -1234.5, '($1,234.50)'],
  ['"$"#,##0.00_);[Red]("$"#,##0.00)', 1234.5, '$1,234.50 '],
  ['[$€-407] #,##0.00', 1234.5, '€ 1,234.50'],
  ['#,##0.00 [$€-407]', -1234.5, '-1,234.50 €'],
  ['[$USD] 0', 7, 'USD 7'],
  ['[Red]0.0;[Blue]-0.0', -2, '-2.0'],
  // accounting (built-in 43): padding, fill, a zero section, a text section
  [builtinFormatCode(43), 0, ' -   '],
  [builtinFormatCode(43), -5, ' (5.00)'],
  [builtinFormatCode(43), 'abc', ' abc '],
  // sections and conditions
  ['0;-0;"zero"', 0, 'zero'],
  ['0;;', -3, ''],
  ['[<1]0.00;0', 0.5, '0.50'],
  ['[<1]0.00;0', 5, '5'],
  // text
  ['"Ref "@', 'X1', 'Ref X1'],
  ['@', 'X1', 'X1'],
  ['0.00', 'words', 'words'],
  // General: 15 significant digits, Excel's exponent form
  ['General', 0.1 + 0.2, '0.3'],
  ['General', 1e21, '1E+21'],
  ['General', 1.5e-7, '1.5E-07'],
  ['General" kg"', 12.5, '12.5 kg'],
  ['0" kg"', 12, '12 kg'],
  // fractions
  ['# ?/?', 1.5, '1 1/2'],
  ['# ??/??', 3.14159, '3 14/99'],
  ['?/?', 0.333, '1/3'],
  ['# ??/100', 0.25, ' 25/100'],
  // dates and times (1900 system, with its 29 February 1900)
  ['yyyy-mm-dd', 44197, '2021-01-01'],
  ['dd/mm/yyyy', 44197.75, '01/01/2021'],
  ['d-mmm-yy', 44197, '1-Jan-21'],
  ['mmmmm', 44197, 'J'],
  ['dddd, mmmm d, yyyy', 44197, 'Friday, January 1, 2021'],
  ['[$-F800]dddd, mmmm dd, yyyy', 44197, 'Friday, January 1, 2021'],
  ['m/d/yyyy h:mm', 44197.5, '1/1/2021 12:00'],
  ['h:mm AM/PM', 0.75, '6:00 PM'],
  ['h:mm a/p', 0.25, '6:00 a'],
  ['h:mm:ss', 0.5 + 1.6 / 86400, '12:00:02'],
  ['h:mm', 10 / 24 + 29 / 1440 + 59 / 86400, '10:29'],
  ['hh:mm', 0.99999999, '00:00'],
  ['[h]:mm:ss', 1.5, '36:00:00'],
  ['mm:ss.0', 0.0001, '00:08.6'],
  ['yyyy-mm-dd', 1, '1900-01-01'],
  ['yyyy-mm-dd', 59, '1900-02-28'],
  ['yyyy-mm-dd', 60, '1900-02-29'],
  ['yyyy-mm-dd', 61, '1900-03-01'],
  // a date Excel cannot show (####) falls back to the number
  ['yyyy-mm-dd', -1, '-1'],
  // built-ins: the locale's short date and date-time as ISO 8601
  [builtinFormatCode(14), 44197, '2021-01-01'],
  [builtinFormatCode(22), 44197.5, '2021-01-01 12:00'],
  [builtinFormatCode(4), 1234.5, '1,234.50'],
  [builtinFormatCode(10), 0.5, '50.00%'],
  [builtinFormatCode(999), 2.5, '2.5'],
];

for (const [code, value, shown] of vectors) {
  t.test(`${JSON.stringify(code)} shows ${JSON.stringify(value)} as ${JSON.stringify(shown)}`, async (t) => {
    const f = compileFormat(code);
    t.equal(typeof value === 'number' ? f.number(value) : f.text(value), shown);
  });
}

t.test('the 1904 date system counts days from 1 January 1904', async (t) => {
  t.equal(compileFormat('yyyy-mm-dd', true).number(0), '1904-01-01');
  t.equal(compileFormat('yyyy-mm-dd', true).number(42428), '2020-02-29');
});

t.test('a code no one could have written shows numbers as General, without a long parse', async (t) => {
  t.equal(compileFormat(`${'#,'.repeat(100_000)}0`).number(1234.5), '1234.5');
  t.equal(compileFormat('"unclosed').number(3), '3');
  t.equal(compileFormat('[unclosed').number(3), '3');
});
