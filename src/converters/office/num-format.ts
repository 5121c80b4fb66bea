// Excel number formats: turns a cell's number (or text) into the text Excel shows for it, from
// the format code of the cell's style (`#,##0.00`, `0.0%`, `[$€-407]#,##0;[Red]-#,##0`,
// `dd/mm/yyyy hh:mm`, `"Ref "@`…) or a built-in numFmtId. Numbers come out in the en-US way
// ('.' for decimals, ',' for thousands), as the codes themselves are written. Colours are
// ignored; `_x` pads one space and `*x` fills nothing (cells are trimmed anyway). The short
// date of the reader's locale (built-in 14, 22) is shown as ISO 8601, which no locale misreads.
// Compile a code once (compileFormat) and render many cells with it: rendering never re-parses.
import { renderDate, type DatePart } from './num-format-date.js';
import { formatGeneral, renderNumber, type Section, type Token } from './num-format-number.js';

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
