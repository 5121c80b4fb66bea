// `npm run bench:quality [-- tables rtl speed …] [--no-install]`: how good the Markdown is, not how fast. Each part
// (tables.ts, …) measures one thing against the target on documents with known
// content and returns rows; this prints them as one table and writes
// bench/results/quality.json. The corpus documents are read from ../shared/corpus in place.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureDebian } from '../debian.js';
import { ROOT } from '../docpipe.js';
import * as headings from './headings.js';
import * as rtl from './rtl.js';
import * as speed from './speed.js';
import * as tables from './tables.js';
import type { QualityRow } from './types.js';

const PARTS: Record<string, { run(): Promise<QualityRow[]> }> = { tables, headings, rtl, speed };

const args = process.argv.slice(2);
const wanted = args.filter((a) => !a.startsWith('--')).map((a) => a.toLowerCase());
const names = Object.keys(PARTS).filter((n) => wanted.length === 0 || wanted.includes(n));
if (names.length === 0) {
  console.error(`no part matches ${wanted.join(', ')}; have ${Object.keys(PARTS).join(', ')}`);
  process.exit(2);
}
// the Debian tools and documents the parts need (--no-install: use what is there)
await ensureDebian({ install: !args.includes('--no-install'), log: (l) => console.error(l) });
const started = new Date();
const load = os.loadavg()[0]!;
const rows: QualityRow[] = [];
for (const n of names) rows.push(...await PARTS[n]!.run());

const w = [Math.max(5, ...rows.map((r) => r.name.length)), Math.max(8, ...rows.map((r) => r.measured.length)), Math.max(6, ...rows.map((r) => r.target.length))];
const line = (a: string, b: string, c: string, d: string): string => `${a.padEnd(w[0]!)}  ${b.padEnd(w[1]!)}  ${c.padEnd(w[2]!)}  ${d}`;
console.log(`quality bench, ${started.toISOString()}, ${os.cpus()[0]?.model ?? 'cpu'} ×${os.availableParallelism()}, load ${load.toFixed(2)}`);
console.log(line('check', 'measured', 'target', 'result'));
for (const r of rows) console.log(line(r.name, r.measured, r.target, r.pass ? 'PASS' : 'FAIL'));
const dir = path.join(ROOT, 'bench/results');
mkdirSync(dir, { recursive: true });
writeFileSync(path.join(dir, 'quality.json'), `${JSON.stringify({ started: started.toISOString(), load, rows }, null, 2)}\n`);
process.exit(0);
