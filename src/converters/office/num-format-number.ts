// The number half of Excel number formats: a value shown through a number section's tokens —
// digit placeholders (0 # ?), decimal point, thousands and scaling commas, percent, E+ notation,
// fractions (# ?/?) and literals — rounded as Excel rounds. Parsing is num-format.ts's.
import type { DatePart } from './num-format-date.js';

export type Token =
  | { t: 'lit'; s: string }
  | { t: 'digit'; c: '0' | '#' | '?' }
  | { t: 'point' } | { t: 'comma' } | { t: 'percent' } | { t: 'slash' } | { t: 'at' } | { t: 'general' }
  | { t: 'exp'; plus: boolean }
  | DatePart;

export interface Section {
  tokens: Token[];
  kind: 'number' | 'date' | 'text' | 'empty';
  condition?: (n: number) => boolean;
  /** Worked out at the first number shown. */
  layout?: NumberLayout;
}

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

export interface NumberLayout {
  intTokens: Token[]; // the tokens before the decimal point (or exponent)
  fracDigits: Array<'0' | '#' | '?'>;
  thousands: boolean;
  scale: number; // percent and trailing-comma scaling, as a factor
}

export function renderNumber(section: Section, value: number): string {
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
