// Excel number formats: turns a cell's number (or text) into the text Excel shows for it, from
// the format code of the cell's style (`#,##0.00`, `0.0%`, `[$€-407]#,##0;[Red]-#,##0`,
// `dd/mm/yyyy hh:mm`, `"Ref "@`…) or a built-in numFmtId. Numbers come out in the en-US way
// ('.' for decimals, ',' for thousands), as the codes themselves are written. Colours are
// ignored; `_x` pads one space and `*x` fills nothing (cells are trimmed anyway). The short
// date of the reader's locale (built-in 14, 22) is shown as ISO 8601, which no locale misreads.
// Compile a code once (compileFormat) and render many cells with it: rendering never re-parses.
import { renderDate, type DatePart } from './num-format-date.js';

type Token =
  | { t: 'lit'; s: string }
  | { t: 'digit'; c: '0' | '#' | '?' }
  | { t: 'point' } | { t: 'comma' } | { t: 'percent' } | { t: 'slash' } | { t: 'at' } | { t: 'general' }
  | { t: 'exp'; plus: boolean }
  | DatePart;

interface Section {
  tokens: Token[];
  kind: 'number' | 'date' | 'text' | 'empty';
  condition?: (n: number) => boolean;
  /** Worked out at the first number shown. */
  layout?: NumberLayout;
}

export interface NumberFormat {
  /** The text of a numeric cell. */
  number(n: number): string;
  /** The text of a text cell: through the format's text section when it has one. */
  text(s: string): string;
}

/** ECMA-376 §18.8.30 built-in formats, as en-US Excel shows them (14 and 22 as ISO dates). */
const BUILTIN: Record<number, string> = {
  0: 'General', 1: '0', 2: '0.00', 3: '#,##0', 4: '#,##0.00',
  5: '"$"#,##0_);("$"#,##0)', 6: '"$"#,##0_);[Red]("$"#,##0)',
  7: '"$"#,##0.00_);("$"#,##0.00)', 8: '"$"#,##0.00_);[Red]("$"#,##0.00)',
  9: '0%', 10: '0.00%', 11: '0.00E+00', 12: '# ?/?', 13: '# ??/??',
  14: 'yyyy-mm-dd', 15: 'd-mmm-yy', 16: 'd-mmm', 17: 'mmm-yy', 18: 'h:mm AM/PM', 19: 'h:mm:ss AM/PM',
  20: 'h:mm', 21: 'h:mm:ss', 22: 'yyyy-mm-dd hh:mm',
  37: '#,##0_);(#,##0)', 38: '#,##0_);[Red](#,##0)', 39: '#,##0.00_);(#,##0.00)', 40: '#,##0.00_);[Red](#,##0.00)',
  41: '_(* #,##0_);_(* (#,##0);_(* "-"_);_(@_)', 42: '_("$"* #,##0_);_("$"* (#,##0);_("$"* "-"_);_(@_)',
  43: '_(* #,##0.00_);_(* (#,##0.00);_(* "-"??_);_(@_)', 44: '_("$"* #,##0.00_);_("$"* (#,##0.00);_("$"* "-"??_);_(@_)',
  45: 'mm:ss', 46: '[h]:mm:ss', 47: 'mm:ss.0', 48: '##0.0E+0', 49: '@',
};
// East Asian built-ins (27–36, 50–58) are locale dates and times; shown as ISO dates, 32/33 as times.
for (const id of [27, 28, 29, 30, 31, 34, 35, 36, 50, 51, 52, 53, 54, 57, 58]) BUILTIN[id] = 'yyyy-mm-dd';
BUILTIN[32] = 'h:mm';
BUILTIN[33] = 'h:mm:ss';
BUILTIN[55] = 'h:mm AM/PM';
BUILTIN[56] = 'h:mm:ss AM/PM';

/** The code of a built-in numFmtId; General for ids Excel does not define. */
export const builtinFormatCode = (id: number): string => BUILTIN[id] ?? 'General';

/** Excel's system long date and time ([$-F800], [$-F400]) in en-US. */
const SYSTEM_LONG_DATE = 'dddd, mmmm d, yyyy';
const SYSTEM_TIME = 'h:mm:ss AM/PM';

// ---- parsing ----

function splitSections(code: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (let i = 0; i < code.length; i++) {
    const ch = code[i]!;
    if (ch === '"') {
      const end = code.indexOf('"', i + 1);
      const stop = end < 0 ? code.length : end + 1;
      cur += code.slice(i, stop);
      i = stop - 1;
    } else if (ch === '\\' || ch === '_' || ch === '*' || ch === '!') {
      cur += code.slice(i, i + 2);
      i++;
    } else if (ch === '[') {
      const end = code.indexOf(']', i);
      const stop = end < 0 ? code.length : end + 1;
      cur += code.slice(i, stop);
      i = stop - 1;
    } else if (ch === ';') {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

const CONDITION_RE = /^\[(<=|>=|<>|<|>|=)\s*(-?[\d.]+(?:[eE][+-]?\d+)?)\]$/;
const COMPARE: Record<string, (a: number, b: number) => boolean> = {
  '<': (a, b) => a < b, '>': (a, b) => a > b, '=': (a, b) => a === b,
  '<=': (a, b) => a <= b, '>=': (a, b) => a >= b, '<>': (a, b) => a !== b,
};

const GENERAL_AT = /general/iy;
const AMPM_AT = /am\/pm|a\/p/iy;

function parseSection(src: string): Section {
  // The system's long date or time stands for the whole section, whatever else it holds.
  if (/\[\$-F800\]/i.test(src)) return parseSection(SYSTEM_LONG_DATE);
  if (/\[\$-F400\]/i.test(src)) return parseSection(SYSTEM_TIME);
  const tokens: Token[] = [];
  let condition: Section['condition'];
  const lit = (s: string): void => {
    const last = tokens[tokens.length - 1];
    if (last?.t === 'lit') last.s += s;
    else tokens.push({ t: 'lit', s });
  };
  const at = (re: RegExp, i: number): RegExpExecArray | null => {
    re.lastIndex = i;
    return re.exec(src);
  };
  for (let i = 0; i < src.length;) {
    const ch = src[i]!;
    if (ch === '"') {
      const end = src.indexOf('"', i + 1);
      if (end < 0) throw new SyntaxError('unclosed quote');
      lit(src.slice(i + 1, end));
      i = end + 1;
    } else if (ch === '\\' || ch === '!') {
      lit(src[i + 1] ?? '');
      i += 2;
    } else if (ch === '_') {
      lit(' ');
      i += 2;
    } else if (ch === '*') {
      i += 2;
    } else if (ch === '[') {
      const end = src.indexOf(']', i);
      if (end < 0) throw new SyntaxError('unclosed bracket');
      const inner = src.slice(i + 1, end);
      i = end + 1;
      const cond = CONDITION_RE.exec(`[${inner}]`);
      if (cond) {
        const [op, v] = [cond[1]!, Number(cond[2])];
        condition = (n) => COMPARE[op]!(n, v);
      } else if (/^(h+|m+|s+)$/i.test(inner)) {
        tokens.push({ t: 'elapsed', unit: inner[0]!.toLowerCase() as 'h' | 'm' | 's', width: inner.length });
      } else if (inner.startsWith('$')) {
        // [$€-407]: a currency symbol, then a locale id; [$-409] is the locale alone.
        const dash = inner.indexOf('-');
        const symbol = inner.slice(1, dash < 0 ? inner.length : dash);
        if (symbol) lit(symbol);
      }
      // colours ([Red], [Color10]) and other tags ([DBNum1]) change nothing in the text
    } else if (at(GENERAL_AT, i)) {
      tokens.push({ t: 'general' });
      i += 7;
    } else if (at(AMPM_AT, i)) {
      const s = at(AMPM_AT, i)![0];
      tokens.push({ t: 'ampm', upper: s[0] === 'A', short: s.length === 3 });
      i += s.length;
    } else if (ch === '0' || ch === '#' || ch === '?') {
      tokens.push({ t: 'digit', c: ch });
      i++;
    } else if ((ch === 'E' || ch === 'e') && (src[i + 1] === '+' || src[i + 1] === '-')) {
      tokens.push({ t: 'exp', plus: src[i + 1] === '+' });
      i += 2;
    } else if (/[yYmMdDhHsSeEbBgG]/.test(ch)) {
      let n = 1;
      while (src[i + n]?.toLowerCase() === ch.toLowerCase()) n++;
      const c = ch.toLowerCase();
      if (c === 'y' || c === 'e' || c === 'b') tokens.push({ t: 'year', width: c === 'y' ? n : 4 });
      else if (c === 'm') tokens.push({ t: 'month', width: n });
      else if (c === 'd') tokens.push({ t: 'day', width: n });
      else if (c === 'h') tokens.push({ t: 'hour', width: n });
      else if (c === 's') tokens.push({ t: 'second', width: n });
      // g (era) shows nothing outside Japanese and Chinese calendars
      i += n;
    } else if (ch === '.') {
      tokens.push({ t: 'point' });
      i++;
    } else if (ch === ',') {
      tokens.push({ t: 'comma' });
      i++;
    } else if (ch === '%') {
      tokens.push({ t: 'percent' });
      i++;
    } else if (ch === '/') {
      tokens.push({ t: 'slash' });
      i++;
    } else if (ch === '@') {
      tokens.push({ t: 'at' });
      i++;
    } else {
      lit(ch);
      i++;
    }
  }
  const isDate = tokens.some((k) => ['year', 'month', 'day', 'hour', 'second', 'ampm', 'elapsed'].includes(k.t));
  const kind = tokens.length === 0 ? 'empty' : isDate ? 'date' : tokens.some((k) => k.t === 'at') ? 'text' : 'number';
  return { tokens: isDate ? dateTokens(tokens) : tokens, kind, condition };
}

/** In a date section: `m` next to `h` or `s` is minutes; `.0` after seconds is a fraction of one. */
function dateTokens(tokens: Token[]): Token[] {
  const out: Token[] = [];
  let afterSeconds = false;
  for (let i = 0; i < tokens.length; i++) {
    const k = tokens[i]!;
    if (k.t === 'second' || (k.t === 'elapsed' && k.unit === 's')) afterSeconds = true;
    if (k.t === 'point' && afterSeconds) {
      let n = 0;
      while (tokens[i + 1 + n]?.t === 'digit') n++;
      if (n > 0) {
        out.push({ t: 'lit', s: '.' }, { t: 'subsecond', width: Math.min(n, 3) });
        i += n;
        continue;
      }
    }
    if (k.t === 'digit') out.push({ t: 'lit', s: k.c === '0' ? '0' : '' });
    else if (k.t === 'point') out.push({ t: 'lit', s: '.' });
    else if (k.t === 'comma') out.push({ t: 'lit', s: ',' });
    else if (k.t === 'slash') out.push({ t: 'lit', s: '/' });
    else if (k.t === 'percent') out.push({ t: 'lit', s: '%' });
    else out.push(k);
  }
  const hours = (k: Token | undefined): boolean => k?.t === 'hour' || (k?.t === 'elapsed' && k.unit === 'h');
  const seconds = (k: Token | undefined): boolean => k?.t === 'second' || (k?.t === 'elapsed' && k.unit === 's');
  for (let i = 0; i < out.length; i++) {
    const k = out[i]!;
    if (k.t !== 'month' || k.width > 2) continue;
    let before = i - 1;
    while (before >= 0 && out[before]!.t === 'lit') before--;
    let after = i + 1;
    while (after < out.length && out[after]!.t === 'lit') after++;
    if (hours(out[before]) || seconds(out[after])) out[i] = { t: 'minute', width: k.width };
  }
  return out;
}

// ---- rendering numbers ----

/** The digits of |x| rounded half away from zero at `decimals` places, on its 15 significant
 *  digits (as Excel keeps them): { int: '' for zero, frac: exactly `decimals` digits }. */
export function roundDigits(x: number, decimals: number): { int: string; frac: string } {
  if (!Number.isFinite(x)) return { int: '', frac: '0'.repeat(decimals) };
  const [mant, expPart] = Math.abs(x).toExponential(14).split('e');
  let digits = mant!.replace('.', '');
  let exp = Number(expPart); // the value is 0.digits × 10^(exp + 1)
  let keep = exp + 1 + decimals;
  if (keep < 0 || (keep === 0 && digits[0]! < '5') || Number(digits) === 0) return { int: '', frac: '0'.repeat(decimals) };
  if (keep < digits.length) {
    const up = digits[keep]! >= '5';
    digits = digits.slice(0, keep);
    if (up) {
      const bumped = keep === 0 ? '1' : (BigInt(digits) + 1n).toString().padStart(keep, '0');
      if (bumped.length > keep) { exp++; keep++; }
      digits = bumped;
    }
  } else digits = digits.padEnd(keep, '0');
  const intLen = exp + 1;
  const int = intLen > 0 ? digits.slice(0, intLen).replace(/^0+/, '') : '';
  const frac = intLen >= 0 ? digits.slice(intLen) : '0'.repeat(-intLen) + digits;
  return { int, frac: frac.slice(0, decimals).padEnd(decimals, '0') };
}

/** General: up to 15 significant digits (0.1+0.2 is 0.3), Excel's E notation past JS's own. */
export function formatGeneral(n: number): string {
  const r = Number(n.toPrecision(15));
  if (Object.is(r, -0) || r === 0) return '0';
  const s = String(r);
  const e = /^(-?[\d.]+)e([+-])(\d+)$/.exec(s);
  return e ? `${e[1]}E${e[2]}${e[3]!.padStart(2, '0')}` : s;
}

interface NumberLayout {
  intTokens: Token[]; // the tokens before the decimal point (or exponent)
  fracDigits: Array<'0' | '#' | '?'>;
  thousands: boolean;
  scale: number; // percent and trailing-comma scaling, as a factor
}

function renderNumber(section: Section, value: number): string {
  const tokens = section.tokens;
  if (tokens.some((k) => k.t === 'general')) {
    return tokens.map((k) => (k.t === 'general' ? formatGeneral(value) : k.t === 'lit' ? k.s : k.t === 'percent' ? '%' : '')).join('');
  }
  if (tokens.some((k) => k.t === 'slash') && tokens.some((k) => k.t === 'digit')) {
    const f = renderFraction(tokens, value);
    if (f !== undefined) return f;
  }
  const expAt = tokens.findIndex((k) => k.t === 'exp');
  const mantissa = expAt < 0 ? tokens : tokens.slice(0, expAt);
  const layout = (section.layout ??= layoutOf(mantissa));
  let x = value * layout.scale;
  const decimals = layout.fracDigits.length;
  let expText = '';
  if (expAt >= 0) {
    const intPlaces = layout.intTokens.filter((k) => k.t === 'digit').length || 1;
    const engineering = intPlaces > 1 && layout.intTokens.some((k) => k.t === 'digit' && k.c === '#');
    const step = engineering ? intPlaces : 1;
    let e = x === 0 ? 0 : Math.floor(Math.log10(Math.abs(x)));
    e = engineering ? Math.floor(e / step) * step : e - (intPlaces - 1);
    // 10 ** e underflows to 0 below 1e-323: scale in two steps there.
    const mantissa = (p: number): number => (p < -300 ? (x * 1e30) / 10 ** (p + 30) : x / 10 ** p);
    let m = mantissa(e);
    const r = roundDigits(m, decimals);
    if (x !== 0 && r.int.length > (engineering ? step : intPlaces)) { e += step; m = mantissa(e); }
    x = m;
    const expTokens = tokens.slice(expAt + 1);
    const width = expTokens.filter((k) => k.t === 'digit').length;
    const sign = e < 0 ? '-' : (tokens[expAt] as { plus: boolean }).plus ? '+' : '';
    const tail = expTokens.filter((k) => k.t === 'lit').map((k) => (k as { s: string }).s).join('');
    expText = `E${sign}${String(Math.abs(e)).padStart(width, '0')}${tail}`;
  }
  const { int, frac } = roundDigits(x, decimals);
  let out = fillInteger(layout.intTokens, int, layout.thousands);
  const pointAt = mantissa.findIndex((k) => k.t === 'point');
  if (pointAt >= 0) {
    out += '.';
    let shown = frac;
    // Optional decimals (# and ?) drop trailing zeros; ? keeps their width as spaces.
    for (let i = decimals - 1; i >= 0 && layout.fracDigits[i] !== '0' && shown[i] === '0'; i--) {
      shown = shown.slice(0, i) + (layout.fracDigits[i] === '?' ? ' ' : '') + shown.slice(i + 1);
    }
    let j = 0;
    for (const k of mantissa.slice(pointAt + 1)) {
      if (k.t === 'digit') out += shown[j++] ?? '';
      else if (k.t === 'lit') out += k.s;
      else if (k.t === 'percent') out += '%';
    }
  }
  return out + expText;
}

function layoutOf(tokens: Token[]): NumberLayout {
  const pointAt = tokens.findIndex((k) => k.t === 'point');
  const intTokens = pointAt < 0 ? tokens : tokens.slice(0, pointAt);
  const fracDigits: NumberLayout['fracDigits'] = [];
  let scale = 1;
  let thousands = false;
  let firstDigit = -1;
  let lastDigit = -1;
  let lastIntDigit = -1;
  for (const [i, k] of tokens.entries()) {
    if (k.t === 'percent') scale *= 100;
    if (k.t !== 'digit') continue;
    if (firstDigit < 0) firstDigit = i;
    lastDigit = i;
    if (pointAt < 0 || i < pointAt) lastIntDigit = i;
    else fracDigits.push(k.c);
  }
  // A comma between integer digits separates thousands; one after the last digit divides by
  // 1000 ("#,##0," shows thousands, "0.0,," millions).
  for (const [i, k] of tokens.entries()) {
    if (k.t !== 'comma' || firstDigit < 0 || i < firstDigit) continue;
    if (i < lastIntDigit) thousands = true;
    else if (i > lastDigit) scale /= 1000;
  }
  return { intTokens, fracDigits, thousands, scale };
}

/** The integer part through its placeholders: extra digits go to the first one; 0 pads with
 *  zeros, ? with spaces, # with nothing; literals between placeholders stay where they are. */
function fillInteger(tokens: Token[], int: string, thousands: boolean): string {
  const places = tokens.filter((k) => k.t === 'digit').length;
  const parts: Array<{ s: string; digits: boolean }> = [];
  let p = 0;
  for (const k of tokens) {
    if (k.t === 'digit') {
      const from = int.length - (places - p);
      let s: string;
      if (p === 0 && from > 0) s = int.slice(0, from + 1);
      else if (from >= 0 && from < int.length) s = int[from]!;
      else s = k.c === '0' ? '0' : k.c === '?' ? ' ' : '';
      parts.push({ s, digits: true });
      p++;
    } else if (k.t === 'lit') parts.push({ s: k.s, digits: false });
    else if (k.t === 'percent') parts.push({ s: '%', digits: false });
    else if (k.t === 'slash') parts.push({ s: '/', digits: false });
  }
  if (!thousands) return parts.map((x) => x.s).join('');
  // Thousands separators go between every three digits shown, counted from the right.
  let count = 0;
  for (let i = parts.length - 1; i >= 0; i--) {
    const part = parts[i]!;
    if (!part.digits) continue;
    let s = '';
    for (let c = part.s.length - 1; c >= 0; c--) {
      const ch = part.s[c]!;
      if (/\d/.test(ch)) {
        if (count > 0 && count % 3 === 0) s = `,${s}`;
        count++;
      }
      s = ch + s;
    }
    part.s = s;
  }
  return parts.map((x) => x.s).join('');
}

/** `# ?/?`, `?/8`, `# ??/100`: the closest fraction with a denominator of that many digits (or
 *  that fixed one), the whole part apart when the code has one; undefined when it is no fraction. */
function renderFraction(tokens: Token[], value: number): string | undefined {
  const slash = tokens.findIndex((k) => k.t === 'slash');
  let numStart = slash;
  while (numStart > 0 && tokens[numStart - 1]!.t === 'digit') numStart--;
  if (numStart === slash) return undefined;
  const after = tokens.slice(slash + 1);
  const afterText = after.map((k) => (k.t === 'digit' ? k.c : k.t === 'lit' ? k.s : '\u0000')).join('');
  const fixed = /^([1-9]\d*)/.exec(afterText);
  const denPlaces = after.findIndex((k) => k.t !== 'digit');
  const denWidth = denPlaces < 0 ? after.length : denPlaces;
  if (!fixed && denWidth === 0) return undefined;
  const wholeTokens = tokens.slice(0, numStart);
  const hasWhole = wholeTokens.some((k) => k.t === 'digit');
  const x = Math.abs(value);
  const whole = hasWhole ? Math.floor(x) : 0;
  const rest = x - whole;
  let num: number;
  let den: number;
  if (fixed) {
    den = Number(fixed[1]);
    num = Math.round(rest * den);
  } else [num, den] = closestFraction(rest, 10 ** Math.min(denWidth, 7) - 1);
  let w = whole;
  if (hasWhole && num === den) { w++; num = 0; }
  const wholeText = hasWhole ? fillInteger(wholeTokens.filter((k) => k.t === 'digit' || k.t === 'lit'), w === 0 && num !== 0 ? '' : String(w), false) : '';
  if (num === 0 && hasWhole) return wholeText.trimEnd() || '0';
  const tail = fixed ? afterText.slice(fixed[1]!.length).replace(/[\u0000#?0]/g, '') : after.slice(denWidth).map((k) => (k.t === 'lit' ? k.s : '')).join('');
  return `${wholeText}${num}/${den}${tail}`;
}

/** The fraction nearest x (0 ≤ x < 1, or any x without a whole part) with den ≤ maxDen. */
function closestFraction(x: number, maxDen: number): [number, number] {
  let [h0, h1, k0, k1] = [0, 1, 1, 0];
  let v = x;
  for (let i = 0; i < 64; i++) {
    const a = Math.floor(v);
    const k2 = a * k1 + k0;
    if (k2 > maxDen) {
      // the best semiconvergent within the limit, if nearer than the last convergent
      const t = Math.floor((maxDen - k0) / k1);
      const [hs, ks] = [t * h1 + h0, t * k1 + k0];
      if (ks > 0 && Math.abs(x - hs / ks) < Math.abs(x - h1 / k1)) return [hs, ks];
      break;
    }
    [h0, h1, k0, k1] = [h1, a * h1 + h0, k1, k2];
    if (v - a < 1e-12) break;
    v = 1 / (v - a);
  }
  return [h1, k1 || 1];
}

// ---- sections ----

class Compiled implements NumberFormat {
  private readonly numeric: Section[];
  private readonly textSection?: Section;
  private readonly conditional: boolean;

  constructor(code: string, private readonly date1904: boolean) {
    const sections = splitSections(code).slice(0, 4).map(parseSection);
    // The fourth section is for text; so is a section holding @ (other than the first of one).
    this.textSection = sections[3] ?? sections.find((s) => s.kind === 'text');
    this.numeric = sections.slice(0, 3).filter((s) => s !== this.textSection || sections.length === 1);
    if (this.numeric.length === 0 || (this.numeric.length === 1 && this.numeric[0]!.kind === 'text')) {
      this.numeric = [parseSection('General')];
    }
    this.conditional = this.numeric.some((s) => s.condition);
  }

  number(n: number): string {
    const [section, signed] = this.pick(n);
    if (section.kind === 'empty') return '';
    let text: string;
    if (section.kind === 'date') {
      const shown = renderDate(section.tokens as DatePart[], n, this.date1904);
      if (shown === undefined) return formatGeneral(n);
      text = shown;
    } else if (section.tokens.length === 1 && section.tokens[0]!.t === 'general') {
      return formatGeneral(signed ? n : Math.abs(n));
    } else text = renderNumber(section, Math.abs(n));
    // A minus only where a digit other than zero shows (-0.001 as 0.00 is 0.00).
    return signed && n < 0 && /[1-9]/.test(text) ? `-${text}` : text;
  }

  text(s: string): string {
    const section = this.textSection;
    if (!section || section.kind === 'empty') return section ? '' : s;
    return section.tokens.map((k) => (k.t === 'at' ? s : k.t === 'lit' ? k.s : '')).join('');
  }

  /** The section for a number, and whether its minus sign is still to be written. */
  private pick(n: number): [Section, boolean] {
    const s = this.numeric;
    if (this.conditional) {
      // Sections chosen by a condition show the number with its sign.
      return [s.find((x) => x.condition?.(n)) ?? s.find((x) => !x.condition) ?? s[s.length - 1]!, true];
    }
    if (s.length === 1 || (n > 0) || (n === 0 && s.length === 2)) return [s[0]!, s.length === 1];
    if (n < 0) return [s[1]!, false];
    return [s[2]!, false];
  }
}

const general = new Compiled('General', false);
/** Excel keeps format codes to 255 characters; a longer one is no format Excel wrote. */
const MAX_CODE = 1024;

/** A format from its code; a code Excel would refuse (an unclosed quote or bracket) shows
 *  numbers as General. */
export function compileFormat(code: string, date1904 = false): NumberFormat {
  if (code === '' || /^general$/i.test(code.trim()) || code.length > MAX_CODE) return general;
  try {
    return new Compiled(code, date1904);
  } catch {
    return general;
  }
}
