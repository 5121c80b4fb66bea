// Polling for what a test waits on: a conversion reaching a terminal status, a value settling
// (the gate hears of a settle just after its commit, a sweep mends on its next pass).
import type { World } from './world.js';

const TERMINAL = ['completed', 'completed_with_errors', 'failed'];
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface ConversionView {
  status: string;
  files: Array<{ id: string; role: string; status: string; bytes: number; error: unknown }>;
}

/** GETs the conversion until it is terminal or `ms` have passed; the last answer either way. */
export async function untilTerminal(w: World, id: string, ms = 15_000): Promise<ConversionView> {
  const until = Date.now() + ms;
  for (;;) {
    const c = await (await w.req('GET', `/v1/conversions/${id}`)).json() as ConversionView;
    if (TERMINAL.includes(c.status) || Date.now() > until) return c;
    await sleep(50);
  }
}

/** Reads until `read` gives `want` or `ms` have passed; the last value either way. */
export async function eventually<T>(read: () => Promise<T>, want: T, ms = 5_000): Promise<T> {
  const until = Date.now() + ms;
  let got = await read();
  while (got !== want && Date.now() < until) {
    await sleep(25);
    got = await read();
  }
  return got;
}
