// Per-thread scheduler accounting from /proc (Linux): CPU time and run-queue wait.
import { readdirSync, readFileSync } from 'node:fs';

export interface Sched {
  /** Nanoseconds on a CPU. */
  cpu: number;
  /** Nanoseconds runnable but waiting for a CPU. */
  wait: number;
}

/** schedstat of every thread of `pid` ('self': this process), by thread id. A thread that ends
 *  between the listing and its read is left out; a process that has ended gives none. */
export function threadSched(pid: number | 'self'): Map<string, Sched> {
  const out = new Map<string, Sched>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const [cpu, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      out.set(tid, { cpu: cpu!, wait: wait! });
    } catch {
      // ended meanwhile
    }
  }
  return out;
}
