// Drives a load with `wrk` (Debian's package): a C load generator that takes a small share of a
// core, so that on 2 cores the ratio of two servers measures the servers, not the generator.
// One POST body and fixed headers through a Lua script, closed loop over `connections`, one wrk
// thread; latency percentiles from --latency.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface WrkResult {
  rps: number;
  /** Responses read in the run, and how many of them were not 2xx/3xx. */
  requests: number;
  non2xx: number;
  /** Socket errors (connect, read, write, timeout) wrk counted. */
  errors: number;
  p50: number;
  p99: number;
  seconds: number;
}

export interface WrkLoad {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  connections: number;
  seconds: number;
}

/** wrk's duration units in milliseconds. */
const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

function ms(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (!m) throw new Error(`wrk latency "${text}" not understood`);
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}

export async function wrk(load: WrkLoad): Promise<WrkResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-wrk-'));
  try {
    const script = path.join(dir, 'request.lua');
    const lines = [`wrk.method = ${JSON.stringify(load.method)}`];
    for (const [k, v] of Object.entries(load.headers)) lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
    if (load.body !== undefined) lines.push(`wrk.body = ${JSON.stringify(load.body)}`);
    writeFileSync(script, `${lines.join('\n')}\n`);
    const { stdout } = await run('wrk', ['-t1', `-c${load.connections}`, `-d${load.seconds}s`, '--latency', '-s', script, load.url],
      { maxBuffer: 1024 * 1024 });
    const grab = (re: RegExp): string | undefined => re.exec(stdout)?.[1];
    const requests = Number(grab(/(\d+) requests in/) ?? NaN);
    const errors = (grab(/Socket errors: (.*)/) ?? '').split(',').reduce((n, part) => n + Number(/(\d+)/.exec(part)?.[1] ?? 0), 0);
    return {
      rps: Number(grab(/Requests\/sec:\s+([\d.]+)/) ?? NaN),
      requests,
      non2xx: Number(grab(/Non-2xx or 3xx responses: (\d+)/) ?? 0),
      errors,
      p50: ms(grab(/^\s+50%\s+(\S+)/m) ?? 'NaNms'),
      p99: ms(grab(/^\s+99%\s+(\S+)/m) ?? 'NaNms'),
      seconds: load.seconds,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
