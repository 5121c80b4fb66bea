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

/** The whole machine's CPU time so far, in seconds summed over its cores (/proc/stat), split as
 *  the kernel counts it; empty on a system without /proc. */
export interface MachineCpu { busy: number; idle: number; iowait: number; steal: number }

/** USER_HZ: the unit of /proc/stat, 100 on every Linux build the bench runs on. */
const TICKS_PER_S = 100;

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

/** Where the machine's CPU time went between two readings, as shares of it (busy, idle, waiting
 *  for the disk, taken by the host for other guests). */
export function cpuShares(before: MachineCpu | undefined, after: MachineCpu | undefined):
  { busy: number; idle: number; iowait: number; steal: number } | undefined {
  if (!before || !after) return undefined;
  const d = { busy: after.busy - before.busy, idle: after.idle - before.idle, iowait: after.iowait - before.iowait, steal: after.steal - before.steal };
  const all = d.busy + d.idle + d.iowait + d.steal;
  if (all <= 0) return undefined;
  return { busy: d.busy / all, idle: d.idle / all, iowait: d.iowait / all, steal: d.steal / all };
}
