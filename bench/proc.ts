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

/** The machine's CPU time split as the kernel counts it: busy, idle, waiting for the disk, and
 *  taken by the host for other guests. */
export interface MachineCpu { busy: number; idle: number; iowait: number; steal: number }

/** USER_HZ: the unit of /proc/stat, 100 on every Linux build the bench runs on. */
const TICKS_PER_S = 100;

/** The whole machine's CPU time so far, in seconds summed over its cores (/proc/stat);
 *  undefined on a system without /proc. */
export function machineCpu(): MachineCpu | undefined {
  let line: string | undefined;
  try {
    line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
  } catch {
    return undefined;
  }
  // cpu user nice system idle iowait irq softirq steal …
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line!.trim().split(/\s+/).slice(1, 9).map(Number) as number[];
  return {
    busy: (user! + nice! + system! + irq! + softirq!) / TICKS_PER_S,
    idle: idle! / TICKS_PER_S, iowait: iowait! / TICKS_PER_S, steal: steal! / TICKS_PER_S,
  };
}

/** Where the machine's CPU time went between two readings, each part as a share of the whole. */
export function cpuShares(before: MachineCpu | undefined, after: MachineCpu | undefined): MachineCpu | undefined {
  if (!before || !after) return undefined;
  const parts = ['busy', 'idle', 'iowait', 'steal'] as const;
  const all = parts.reduce((a, k) => a + after[k] - before[k], 0);
  if (all <= 0) return undefined;
  const shares = {} as MachineCpu;
  for (const k of parts) shares[k] = (after[k] - before[k]) / all;
  return shares;
}
