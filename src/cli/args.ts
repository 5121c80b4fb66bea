// A small, strict argument parser: `--name value` and `--flag` pairs after positional words.
export interface Parsed {
  words: string[];
  flags: Record<string, string | true>;
}

export function parseArgs(argv: string[]): Parsed {
  const words: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      if (eq > 0) flags[a.slice(2, eq)] = a.slice(eq + 1);
      else if (i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) flags[a.slice(2)] = argv[++i]!;
      else flags[a.slice(2)] = true;
    } else words.push(a);
  }
  return { words, flags };
}

/** The command line itself is wrong: the message, then the usage text (exit 2). */
export class UsageError extends Error {}

/** What the command names does not exist (an account, a key): the message alone (exit 1). */
export class NotFound extends Error {}

export function need(p: Parsed, name: string): string {
  const v = p.flags[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}
