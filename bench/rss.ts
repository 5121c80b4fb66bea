// Samples a process's resident set size from /proc while a scenario runs.
import { procBytes } from './docpipe.js';

export interface RssSample {
  /** Milliseconds since sampling started. */
  t: number;
  rss: number;
}

export interface RssSampler {
  stop(): RssSample[];
  peak(): number;
}

export function sampleRss(pid: number, everyMs = 50): RssSampler {
  const t0 = performance.now();
  const samples: RssSample[] = [{ t: 0, rss: procBytes(pid, 'VmRSS') }];
  const timer = setInterval(() => samples.push({ t: performance.now() - t0, rss: procBytes(pid, 'VmRSS') }), everyMs);
  return {
    stop() {
      clearInterval(timer);
      samples.push({ t: performance.now() - t0, rss: procBytes(pid, 'VmRSS') });
      return samples;
    },
    peak: () => Math.max(...samples.map((s) => s.rss)),
  };
}

export const MB = 1024 * 1024;

/** Every `n`-th sample in MB, for the results JSON. */
export function thin(samples: RssSample[], n = 200): Array<[number, number]> {
  const step = Math.max(1, Math.ceil(samples.length / n));
  return samples.filter((_, i) => i % step === 0).map((s) => [Math.round(s.t), Math.round(s.rss / MB)]);
}
