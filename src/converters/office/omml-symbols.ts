// The characters of Office Math text as LaTeX: Greek letters, operators, relations, arrows and
// the characters LaTeX reserves. omml.ts uses these for the text of math runs, and for the
// plain-text fallback of an element it does not understand.

const GREEK: Record<string, string> = {
  α: 'alpha', β: 'beta', γ: 'gamma', δ: 'delta', ϵ: 'epsilon', ε: 'varepsilon', ζ: 'zeta', η: 'eta', θ: 'theta',
  ϑ: 'vartheta', ι: 'iota', κ: 'kappa', λ: 'lambda', μ: 'mu', ν: 'nu', ξ: 'xi', π: 'pi', ϖ: 'varpi', ρ: 'rho',
  ϱ: 'varrho', σ: 'sigma', ς: 'varsigma', τ: 'tau', υ: 'upsilon', ϕ: 'phi', φ: 'varphi', χ: 'chi', ψ: 'psi', ω: 'omega',
  Γ: 'Gamma', Δ: 'Delta', Θ: 'Theta', Λ: 'Lambda', Ξ: 'Xi', Π: 'Pi', Σ: 'Sigma', Υ: 'Upsilon', Φ: 'Phi', Ψ: 'Psi', Ω: 'Omega',
};

/** Capital Greek letters that look like Latin ones have no LaTeX command of their own. */
const LATIN_LOOKALIKES: Record<string, string> = {
  Α: 'A', Β: 'B', Ε: 'E', Ζ: 'Z', Η: 'H', Ι: 'I', Κ: 'K', Μ: 'M', Ν: 'N', Ο: 'O', Ρ: 'P', Τ: 'T', Χ: 'X', ο: 'o',
};

const SYMBOLS: Record<string, string> = {
  '∞': '\\infty', '±': '\\pm', '∓': '\\mp', '×': '\\times', '÷': '\\div', '·': '\\cdot', '⋅': '\\cdot', '∙': '\\cdot',
  '∗': '\\ast', '∘': '\\circ', '•': '\\bullet', '⊕': '\\oplus', '⊖': '\\ominus', '⊗': '\\otimes', '⊙': '\\odot',
  '≤': '\\leq', '≥': '\\geq', '≦': '\\leqq', '≧': '\\geqq', '≠': '\\neq', '≈': '\\approx', '≡': '\\equiv',
  '≢': '\\not\\equiv', '∼': '\\sim', '≃': '\\simeq', '≅': '\\cong', '∝': '\\propto', '≪': '\\ll', '≫': '\\gg',
  '≺': '\\prec', '≻': '\\succ', '⊥': '\\perp', '∥': '\\parallel', '∦': '\\nparallel', '≜': '\\triangleq',
  '≔': '\\coloneqq', '≐': '\\doteq', '∣': '\\mid', '∤': '\\nmid',
  '→': '\\rightarrow', '←': '\\leftarrow', '↔': '\\leftrightarrow', '⇒': '\\Rightarrow', '⇐': '\\Leftarrow',
  '⇔': '\\Leftrightarrow', '↦': '\\mapsto', '↑': '\\uparrow', '↓': '\\downarrow', '⟶': '\\longrightarrow',
  '⟹': '\\Longrightarrow', '⟺': '\\Longleftrightarrow', '↪': '\\hookrightarrow', '⇀': '\\rightharpoonup',
  '∈': '\\in', '∉': '\\notin', '∋': '\\ni', '⊂': '\\subset', '⊃': '\\supset', '⊆': '\\subseteq', '⊇': '\\supseteq',
  '⊄': '\\not\\subset', '⊊': '\\subsetneq', '∪': '\\cup', '∩': '\\cap', '∖': '\\setminus', '∅': '\\emptyset',
  '∀': '\\forall', '∃': '\\exists', '∄': '\\nexists', '¬': '\\neg', '∧': '\\wedge', '∨': '\\vee', '⊢': '\\vdash',
  '⊨': '\\models', '∴': '\\therefore', '∵': '\\because',
  '∂': '\\partial', '∇': '\\nabla', 'ℏ': '\\hbar', 'ℓ': '\\ell', '℘': '\\wp', 'ℜ': '\\Re', 'ℑ': '\\Im', 'ℵ': '\\aleph',
  'ℝ': '\\mathbb{R}', 'ℕ': '\\mathbb{N}', 'ℤ': '\\mathbb{Z}', 'ℚ': '\\mathbb{Q}', 'ℂ': '\\mathbb{C}', 'ℙ': '\\mathbb{P}',
  '…': '\\ldots', '⋯': '\\cdots', '⋮': '\\vdots', '⋱': '\\ddots', '°': '^{\\circ}', '′': "'", '″': "''", '‴': "'''",
  '∠': '\\angle', '△': '\\triangle', '□': '\\square', '√': '\\surd', '∎': '\\blacksquare', '⋆': '\\star',
  '∑': '\\sum', '∏': '\\prod', '∐': '\\coprod', '∫': '\\int', '∬': '\\iint', '∭': '\\iiint', '∮': '\\oint',
  '⋃': '\\bigcup', '⋂': '\\bigcap', '⋁': '\\bigvee', '⋀': '\\bigwedge', '⨁': '\\bigoplus', '⨂': '\\bigotimes',
  '⟨': '\\langle', '⟩': '\\rangle', '〈': '\\langle', '〉': '\\rangle', '⌊': '\\lfloor', '⌋': '\\rfloor',
  '⌈': '\\lceil', '⌉': '\\rceil', '‖': '\\|',
  '−': '-', '∕': '/', '＝': '=', '\u00a0': ' ', '\u2009': '\\,', '\u2005': '\\:', '\u2004': '\\;', '\u2003': '\\quad',
  // Invisible operators (function application, times, separator, plus) carry no ink.
  '\u2061': '', '\u2062': '', '\u2063': '', '\u2064': '', '\u200b': '',
};

/** Characters LaTeX reads as syntax, as they are written to be seen in math. */
const RESERVED: Record<string, string> = {
  '\\': '\\backslash', '{': '\\{', '}': '\\}', '#': '\\#', '%': '\\%', $: '\\$', '&': '\\&', _: '\\_',
  '^': '\\hat{}', '~': '\\sim',
};

/** The same characters in \text{…}. */
const TEXT_RESERVED: Record<string, string> = {
  '\\': '\\textbackslash{}', '{': '\\{', '}': '\\}', '#': '\\#', '%': '\\%', $: '\\$', '&': '\\&', _: '\\_',
  '^': '\\^{}', '~': '\\~{}',
};

/** Function names LaTeX has an operator for (\sin, \lim…); others become \operatorname{…}. */
export const FUNCTIONS = new Set([
  'sin', 'cos', 'tan', 'cot', 'sec', 'csc', 'arcsin', 'arccos', 'arctan', 'sinh', 'cosh', 'tanh', 'coth',
  'log', 'ln', 'lg', 'exp', 'lim', 'liminf', 'limsup', 'max', 'min', 'sup', 'inf', 'det', 'dim', 'ker', 'deg',
  'gcd', 'arg', 'hom', 'Pr',
]);

/** Functions whose limits go under them (\lim_{n\to\infty}), as limLow writes them. */
export const LIMIT_FUNCTIONS = new Set(['lim', 'liminf', 'limsup', 'max', 'min', 'sup', 'inf', 'det', 'gcd', 'Pr']);

/** Mathematical Alphanumeric Symbols (𝑥, 𝐀, 𝛼) and ℎ are styled letters: their plain letter. */
function plainLetter(ch: string): string {
  const cp = ch.codePointAt(0)!;
  return (cp >= 0x1d400 && cp <= 0x1d7ff) || cp === 0x210e ? ch.normalize('NFKC') : ch;
}

/** A command name followed by a letter needs a space between them: `\alpha x`, not `\alphax`. */
export function cat(a: string, b: string): string {
  return /\\[A-Za-z]+$/.test(a) && /^[A-Za-z]/.test(b) ? `${a} ${b}` : a + b;
}

/**
 * Math text as LaTeX, character by character. `ampersands` keeps `&` as an alignment point
 * (inside equation arrays); elsewhere it is a literal ampersand.
 */
export function mathText(text: string, ampersands = false): string {
  let out = '';
  for (const raw of text) {
    const ch = plainLetter(raw);
    let piece: string;
    if (ch === '&' && ampersands) piece = '&';
    else if (ch in RESERVED) piece = RESERVED[ch]!;
    else if (ch in GREEK) piece = `\\${GREEK[ch]}`;
    else if (ch in LATIN_LOOKALIKES) piece = LATIN_LOOKALIKES[ch]!;
    else if (ch in SYMBOLS) piece = SYMBOLS[ch]!;
    else if (/[\r\n\t]/.test(ch)) piece = ' ';
    else piece = ch;
    out = cat(out, piece);
  }
  return out;
}

/** Text for \text{…}: the reserved characters escaped, everything else as written. */
export function textModeText(text: string): string {
  let out = '';
  for (const ch of text) out += TEXT_RESERVED[ch] ?? (/[\r\n\t]/.test(ch) ? ' ' : ch);
  return out;
}

const ACCENTS: Record<string, string> = {
  '\u0300': 'grave', '\u0301': 'acute', '\u0302': 'hat', '^': 'hat', '\u0303': 'tilde', '~': 'tilde', '\u0304': 'bar',
  '\u0305': 'overline', '¯': 'bar', '\u0306': 'breve', '\u0307': 'dot', '˙': 'dot', '\u0308': 'ddot', '¨': 'ddot',
  '\u030c': 'check', '\u20db': 'dddot', '\u20d7': 'vec', '\u20d1': 'vec', '→': 'vec', '\u20d6': 'overleftarrow',
  '\u20e1': 'overleftrightarrow',
};

/** The LaTeX accent command for an accent character, or undefined. */
export const accentCommand = (ch: string): string | undefined => ACCENTS[ch];

const DELIMITERS: Record<string, string> = {
  '(': '(', ')': ')', '[': '[', ']': ']', '{': '\\{', '}': '\\}', '|': '|', '‖': '\\|', '⟨': '\\langle',
  '⟩': '\\rangle', '〈': '\\langle', '〉': '\\rangle', '⌊': '\\lfloor', '⌋': '\\rfloor', '⌈': '\\lceil',
  '⌉': '\\rceil', '/': '/', '\\': '\\backslash', '↑': '\\uparrow', '↓': '\\downarrow',
};

/** A delimiter after \left or \right; an empty or unknown one is the invisible `.`. */
export const delimiter = (ch: string): string => DELIMITERS[ch] ?? '.';
