// Structured JSON logs (pino). Never log API keys or document content.
// In a terminal (stdout is a TTY and LOG_PRETTY is not 0, or LOG_PRETTY=1 anywhere) the same
// records are printed as one readable line each: `HH:MM:SS LEVEL msg key=value …`.
import pino from 'pino';

export type Logger = pino.Logger;

export interface LoggerOptions {
  /** Human-readable lines instead of JSON; default: wantPretty(). */
  pretty?: boolean;
  /** Where lines go; default stdout. */
  out?: { write(line: string): unknown };
  /** ANSI colours in pretty lines; default: when `out` is a TTY. */
  color?: boolean;
}

export function createLogger(level: string, opts: LoggerOptions = {}): Logger {
  const options: pino.LoggerOptions = { level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime };
  const out = opts.out ?? process.stdout;
  if (!(opts.pretty ?? wantPretty())) return opts.out ? pino(options, opts.out as pino.DestinationStream) : pino(options);
  const color = opts.color ?? (out as { isTTY?: boolean }).isTTY === true;
  return pino(options, { write: (line: string) => out.write(prettyLine(line, color)) });
}

export function wantPretty(env: NodeJS.ProcessEnv = process.env, isTTY = process.stdout.isTTY): boolean {
  if (env.LOG_PRETTY === '0') return false;
  if (env.LOG_PRETTY === '1') return true;
  return isTTY === true;
}

const LEVELS: Record<number, [string, string]> = {
  10: ['TRACE', '90'], 20: ['DEBUG', '90'], 30: ['INFO ', '32'], 40: ['WARN ', '33'], 50: ['ERROR', '31'], 60: ['FATAL', '35'],
};

/** One pino JSON record (a line) as a readable line; anything unparsable passes through. */
export function prettyLine(json: string, color = false): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const paint = (code: string, s: string): string => (color ? `\x1b[${code}m${s}\x1b[0m` : s);
  const { level, time, msg, err, ...rest } = rec;
  const [name, code] = LEVELS[level as number] ?? [String(level).padEnd(5), '0'];
  let text = typeof msg === 'string' ? msg : '';
  if (text === 'request' && typeof rest.method === 'string' && typeof rest.route === 'string') {
    text = `${rest.method} ${rest.route} ${String(rest.status)} ${String(rest.ms)}ms`;
    for (const k of ['method', 'route', 'status', 'ms']) delete rest[k];
  }
  const parts = [paint('90', clock(time)), paint(code, name), text];
  for (const [k, v] of Object.entries(rest)) {
    if (v === undefined) continue;
    parts.push(`${paint('90', `${k}=`)}${value(v)}`);
  }
  let line = parts.filter(Boolean).join(' ');
  const e = err as { message?: unknown; stack?: unknown } | undefined;
  if (e && typeof e === 'object') {
    line += ` ${paint('90', 'err=')}${value(e.message)}`;
    if (typeof e.stack === 'string') line += `\n${e.stack.split('\n').slice(1).join('\n')}`;
  }
  return `${line}\n`;
}

function clock(time: unknown): string {
  const d = typeof time === 'string' || typeof time === 'number' ? new Date(time) : new Date();
  const p = (n: number): string => String(n).padStart(2, '0');
  return Number.isNaN(d.getTime()) ? '--:--:--' : `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  return JSON.stringify(v);
}
