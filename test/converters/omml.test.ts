import t from 'tap';
import { mathMarkdown, ommlToLatex } from '../../src/converters/office/omml.js';
import { parseXml, type XNode } from '../../src/converters/office/ooxml.js';

const M = 'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math"';
const root = (xml: string): XNode => parseXml(xml).find((n) => !('#text' in n))!;
const latex = (inner: string): string => ommlToLatex(root(`<m:oMath ${M}>${inner}</m:oMath>`));

/** A math run; `sty` is the math style (p = plain upright). */
const r = (text: string, sty?: string): string =>
  `<m:r>${sty ? `<m:rPr><m:sty m:val="${sty}"/></m:rPr>` : ''}<w:rPr><w:rFonts w:ascii="Cambria Math"/></w:rPr><m:t>${text}</m:t></m:r>`;
const e = (inner: string): string => `<m:e>${inner}</m:e>`;
const frac = (num: string, den: string, type?: string): string =>
  `<m:f>${type ? `<m:fPr><m:type m:val="${type}"/></m:fPr>` : ''}<m:num>${num}</m:num><m:den>${den}</m:den></m:f>`;
const nary = (chr: string | undefined, sub: string, sup: string, body: string, hide = ''): string =>
  `<m:nary><m:naryPr>${chr ? `<m:chr m:val="${chr}"/>` : ''}<m:limLoc m:val="undOvr"/>${hide}<m:ctrlPr/></m:naryPr>`
  + `<m:sub>${sub}</m:sub><m:sup>${sup}</m:sup>${e(body)}</m:nary>`;
const delim = (inner: string, beg?: string, end?: string, sep?: string): string => {
  const pr = [beg !== undefined ? `<m:begChr m:val="${beg}"/>` : '', end !== undefined ? `<m:endChr m:val="${end}"/>` : '', sep ? `<m:sepChr m:val="${sep}"/>` : ''].join('');
  return `<m:d><m:dPr>${pr}</m:dPr>${inner}</m:d>`;
};
const matrix = (rows: string[][]): string =>
  `<m:m><m:mPr><m:mcs><m:mc><m:mcPr><m:count m:val="${rows[0]!.length}"/></m:mcPr></m:mc></m:mcs></m:mPr>`
  + rows.map((row) => `<m:mr>${row.map((c) => e(r(c))).join('')}</m:mr>`).join('') + '</m:m>';
const sSup = (b: string, sup: string): string => `<m:sSup>${e(b)}<m:sup>${sup}</m:sup></m:sSup>`;
const sSub = (b: string, sub: string): string => `<m:sSub>${e(b)}<m:sub>${sub}</m:sub></m:sSub>`;

const vectors: Array<[string, string, string]> = [
  ['a fraction', frac(r('a+b'), r('c')), '\\frac{a+b}{c}'],
  ['a linear fraction', frac(r('a+b'), r('c'), 'lin'), '{a+b}/c'],
  ['a sum with limits', nary('∑', r('i=1'), r('n'), sSup(r('x'), r('i'))), '\\sum_{i=1}^{n} x^{i}'],
  ['an integral (the default operator) with limits', nary(undefined, r('0'), r('∞'), r('f(x)dx')), '\\int_{0}^{\\infty} f(x)dx'],
  ['an n-ary operator with hidden limits', nary('∏', '', '', r('k'), '<m:subHide m:val="1"/><m:supHide m:val="1"/>'), '\\prod k'],
  ['a matrix in parentheses', delim(e(matrix([['1', '0'], ['0', '1']]))), '\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}'],
  ['a matrix in brackets', delim(e(matrix([['a', 'b']])), '[', ']'), '\\begin{bmatrix} a & b \\end{bmatrix}'],
  ['a determinant', delim(e(matrix([['a', 'b'], ['c', 'd']])), '|', '|'), '\\begin{vmatrix} a & b \\\\ c & d \\end{vmatrix}'],
  ['a bare matrix', matrix([['x'], ['y']]), '\\begin{matrix} x \\\\ y \\end{matrix}'],
  ['a square root', `<m:rad><m:radPr><m:degHide m:val="1"/></m:radPr><m:deg/>${e(r('x'))}</m:rad>`, '\\sqrt{x}'],
  ['a cube root', `<m:rad><m:deg>${r('3')}</m:deg>${e(r('x+1'))}</m:rad>`, '\\sqrt[3]{x+1}'],
  ['subscripts and superscripts', `${sSub(r('x'), r('1'))}+<m:sSubSup>${e(r('y'))}<m:sub>${r('i')}</m:sub><m:sup>${r('2')}</m:sup></m:sSubSup>`, 'x_{1}y_{i}^{2}'],
  ['a superscript over a sum', sSup(r('a+b'), r('2')), '{a+b}^{2}'],
  ['a pre-script', `<m:sPre><m:sub>${r('a')}</m:sub><m:sup>${r('b')}</m:sup>${e(r('X'))}</m:sPre>`, '{}_{a}^{b}X'],
  ['parentheses with a separator', delim(e(r('a')) + e(r('b'))), '\\left( a \\mid b \\right)'],
  ['an absolute value', delim(e(r('x')), '|', '|'), '\\left| x \\right|'],
  ['a brace open on one side', delim(e(r('x')), '{', ''), '\\left\\{ x \\right.'],
  ['angle brackets with a comma', delim(e(r('u')) + e(r('v')), '⟨', '⟩', ','), '\\left\\langle u , v \\right\\rangle'],
  ['a hat accent (the default)', `<m:acc><m:accPr/>${e(r('x'))}</m:acc>`, '\\hat{x}'],
  ['a wide hat', `<m:acc>${e(r('xy'))}</m:acc>`, '\\widehat{xy}'],
  ['a vector arrow', `<m:acc><m:accPr><m:chr m:val="\u20d7"/></m:accPr>${e(r('v'))}</m:acc>`, '\\vec{v}'],
  ['an overbar', `<m:bar><m:barPr><m:pos m:val="top"/></m:barPr>${e(r('AB'))}</m:bar>`, '\\overline{AB}'],
  ['an underbrace with a label', `<m:limLow>${e(`<m:groupChr>${e(r('a+b'))}</m:groupChr>`)}<m:lim>${r('n')}</m:lim></m:limLow>`, '\\underbrace{a+b}_{n}'],
  ['Greek letters and operators', r('α+β≤∞±Δ'), '\\alpha+\\beta\\leq\\infty\\pm\\Delta'],
  ['a command before a letter keeps a space', r('αx'), '\\alpha x'],
  ['math italic letters as plain letters', r('𝑥+𝛽'), 'x+\\beta'],
  ['characters LaTeX reserves', r('50%_{a}#'), '50\\%\\_\\{a\\}\\#'],
  ['a function', `<m:func><m:fName>${r('sin', 'p')}</m:fName>${e(r('x'))}</m:func>`, '\\sin x'],
  ['an unknown function name', `<m:func><m:fName>${r('sgn', 'p')}</m:fName>${e(r('x'))}</m:func>`, '\\operatorname{sgn} x'],
  ['a limit', `<m:func><m:fName><m:limLow>${e(r('lim', 'p'))}<m:lim>${r('n→∞')}</m:lim></m:limLow></m:fName>${e(sSub(r('a'), r('n')))}</m:func>`, '\\lim_{n\\rightarrow\\infty} a_{n}'],
  ['upright text', r('max', 'p') + r('dx', 'p'), '\\max\\mathrm{dx}'],
  ['normal text', `<m:r><m:rPr><m:nor/></m:rPr><m:t>if </m:t></m:r>${r('x&gt;0')}`, '\\text{if }x>0'],
  ['double-struck letters', `<m:r><m:rPr><m:scr m:val="double-struck"/></m:rPr><m:t>R</m:t></m:r>`, '\\mathbb{R}'],
  ['an equation array keeps its alignment points', `<m:eqArr>${e(r('x&amp;=1'))}${e(r('y&amp;=2'))}</m:eqArr>`, '\\begin{aligned} x&=1 \\\\ y&=2 \\end{aligned}'],
  ['an ampersand outside an equation array is a character', r('a&amp;b'), 'a\\&b'],
  ['a boxed formula', `<m:borderBox>${e(r('E'))}</m:borderBox>`, '\\boxed{E}'],
  ['an unknown element keeps its text', `${r('a')}<m:madeUp><m:inner>${r('q')}</m:inner></m:madeUp>${r('b')}`, 'aqb'],
  ['tracked deletions are left out, insertions kept', `<w:del>${r('old')}</w:del><w:ins>${r('new')}</w:ins>`, 'new'],
];

for (const [name, xml, expected] of vectors) {
  t.test(`OMML to LaTeX: ${name}`, async (t) => {
    t.equal(latex(xml), expected);
  });
}

t.test('nested fractions convert level by level', async (t) => {
  let xml = r('z');
  for (let i = 0; i < 30; i++) xml = frac(r(`a${i}`), xml);
  const out = latex(xml);
  t.match(out, /^\\frac\{a29\}\{\\frac\{a28\}/);
  t.ok(out.endsWith(`{\\frac{a0}{z}${'}'.repeat(29)}`));
});

t.test('a display paragraph gives one $$…$$ per equation; an inline equation $…$; an empty one nothing', async (t) => {
  const para = root(`<m:oMathPara ${M}><m:oMathParaPr><m:jc m:val="center"/></m:oMathParaPr><m:oMath>${r('a=1')}</m:oMath><m:oMath>${r('b=2')}</m:oMath></m:oMathPara>`);
  t.equal(mathMarkdown(para), '$$a=1$$ $$b=2$$');
  t.equal(mathMarkdown(root(`<m:oMath ${M}>${frac(r('1'), r('2'))}</m:oMath>`)), '$\\frac{1}{2}$');
  t.equal(mathMarkdown(root(`<m:oMath ${M}></m:oMath>`)), '');
});
