// The date and time half of Excel number formats: a serial date (days since the workbook's
// epoch, the time of day as the fraction) shown through the parts of a date section (yyyy, mmm,
// dd, hh, mm, ss, .000, AM/PM, [h] elapsed hours) in en-US names. Parsing is num-format.ts's.

export type DatePart =
  | { t: 'year' | 'month' | 'day' | 'hour' | 'minute' | 'second' | 'subsecond'; width: number }
  | { t: 'elapsed'; unit: 'h' | 'm' | 's'; width: number }
  | { t: 'ampm'; upper: boolean; short: boolean }
  | { t: 'lit'; s: string };

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const DAY_MS = 86_400_000;

/** Past 9999-12-31 Excel shows ####; so does a negative date. */
const LAST_SERIAL = 2_958_466;

interface Ymd { y: number; m: number; d: number; weekday: number }

/** The calendar day of a serial day number. The 1900 system counts a 29 February 1900 that never
 *  was (serial 60), so days before it sit one off the real calendar; serial 0 is "1900-01-00". */
function calendarDay(days: number, date1904: boolean): Ymd {
  if (!date1904 && days === 0) return { y: 1900, m: 1, d: 0, weekday: 6 };
  if (!date1904 && days === 60) return { y: 1900, m: 2, d: 29, weekday: 3 };
  const epoch = date1904 ? Date.UTC(1904, 0, 1) : days < 60 ? Date.UTC(1899, 11, 31) : Date.UTC(1899, 11, 30);
  const at = new Date(epoch + days * DAY_MS);
  return { y: at.getUTCFullYear(), m: at.getUTCMonth() + 1, d: at.getUTCDate(), weekday: at.getUTCDay() };
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/** The text of a serial date through a date section's parts; undefined where Excel shows ####. */
export function renderDate(parts: readonly DatePart[], serial: number, date1904: boolean): string | undefined {
  if (!(serial >= 0) || serial >= LAST_SERIAL) return undefined;
  // Rounded to what the format shows of a second; larger units are then cut, not rounded
  // (10:29:59 shown as h:mm is 10:29, as in Excel).
  let sub = 0;
  for (const p of parts) if (p.t === 'subsecond' && p.width > sub) sub = p.width;
  const perSecond = 10 ** sub;
  const total = Math.round(serial * 86_400 * perSecond);
  const perDay = 86_400 * perSecond;
  const days = Math.floor(total / perDay);
  const inDay = total - days * perDay;
  const secs = Math.floor(inDay / perSecond);
  const fraction = pad(inDay - secs * perSecond, sub);
  const [hour, minute, second] = [Math.floor(secs / 3600), Math.floor((secs % 3600) / 60), secs % 60];
  const twelve = parts.some((p) => p.t === 'ampm');
  const date = calendarDay(days, date1904);

  let out = '';
  for (const p of parts) {
    switch (p.t) {
      case 'lit': out += p.s; break;
      case 'year': out += p.width <= 2 ? pad(date.y % 100, 2) : pad(date.y, 4); break;
      case 'month':
        out += p.width === 1 ? String(date.m) : p.width === 2 ? pad(date.m, 2)
          : p.width === 3 ? MONTHS[date.m - 1]!.slice(0, 3) : p.width === 5 ? MONTHS[date.m - 1]![0]! : MONTHS[date.m - 1]!;
        break;
      case 'day':
        out += p.width === 1 ? String(date.d) : p.width === 2 ? pad(date.d, 2)
          : p.width === 3 ? DAYS[date.weekday]!.slice(0, 3) : DAYS[date.weekday]!;
        break;
      case 'hour': {
        const h = twelve ? hour % 12 || 12 : hour;
        out += p.width >= 2 ? pad(h, 2) : String(h);
        break;
      }
      case 'minute': out += p.width >= 2 ? pad(minute, 2) : String(minute); break;
      case 'second': out += p.width >= 2 ? pad(second, 2) : String(second); break;
      case 'subsecond': out += fraction.slice(0, p.width); break;
      case 'elapsed': {
        const per = p.unit === 'h' ? 3600 : p.unit === 'm' ? 60 : 1;
        out += pad(Math.floor(total / perSecond / per), p.width);
        break;
      }
      case 'ampm': {
        const pm = hour >= 12;
        const text = p.short ? (pm ? 'P' : 'A') : pm ? 'PM' : 'AM';
        out += p.upper ? text : text.toLowerCase();
        break;
      }
    }
  }
  return out;
}
