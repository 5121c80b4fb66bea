// What a scenario is and what it reports: rows of one table (scenario, docpipe figure, baseline
// figure, ratio, target, pass/fail), plus the raw numbers it measured for the results JSON.
import type { Bench } from './docpipe.js';
import type { Tools } from './debian.js';

export interface Figure {
  value: number;
  unit: string;
  /** The figure is a difference (a growth, say), which may fall below zero. */
  signed?: boolean;
}

export interface Row {
  /** Scenario letter and short name, e.g. "A cheap path". */
  scenario: string;
  /** What this row checks, e.g. "req/s vs bare uWS". */
  check: string;
  docpipe: Figure | null;
  baseline: (Figure & { label: string }) | null;
  /** docpipe / baseline, when both exist. */
  ratio: number | null;
  /** The target in words, e.g. "≥ 40 % of baseline". */
  target: string;
  /** How far along the target is met: 1 = exactly on target, > 1 = better. Null without one. */
  score: number | null;
  /** Null: nothing to judge (an informative row, or a skipped baseline). */
  pass: boolean | null;
  note?: string;
}

export interface Ctx {
  quick: boolean;
  tools: Tools;
  bench: Bench;
  /** Scratch directory for corpora (removed at the end). */
  dir: string;
  log(line: string): void;
}

export interface ScenarioResult {
  rows: Row[];
  /** Everything measured, as it was measured, for bench/results/<timestamp>.json. */
  raw: Record<string, unknown>;
}

export interface Scenario {
  id: string;
  title: string;
  run(ctx: Ctx): Promise<ScenarioResult>;
}

const pct = (x: number): string => `${Math.round(x * 100)} %`;

/** docpipe must reach at least `min` × the baseline. */
export function ratioRow(scenario: string, check: string, docpipe: Figure, baseline: (Figure & { label: string }) | null,
  min: number, note?: string): Row {
  const target = min >= 1 ? `≥ ${min}× baseline` : `≥ ${pct(min)} of baseline`;
  if (!baseline || !(baseline.value > 0)) {
    return { scenario, check, docpipe, baseline, ratio: null, target, score: null, pass: null, note: notes(note, 'baseline skipped') };
  }
  const ratio = docpipe.value / baseline.value;
  return { scenario, check, docpipe, baseline, ratio, target, score: ratio / min, pass: ratio >= min, note };
}

/** docpipe's figure must stay at or under `limit`. */
export function atMostRow(scenario: string, check: string, docpipe: Figure, limit: number, note?: string): Row {
  const ok = Number.isFinite(docpipe.value) && docpipe.value <= limit;
  const score = docpipe.value > 0 ? limit / docpipe.value : (Number.isFinite(docpipe.value) ? 2 : 0);
  return { scenario, check, docpipe, baseline: null, ratio: null, target: `≤ ${limit} ${docpipe.unit}`, score, pass: ok, note };
}

/** docpipe's figure must reach at least `limit`. */
export function atLeastRow(scenario: string, check: string, docpipe: Figure, limit: number, note?: string): Row {
  const ok = Number.isFinite(docpipe.value) && docpipe.value >= limit;
  return { scenario, check, docpipe, baseline: null, ratio: null, target: `≥ ${limit} ${docpipe.unit}`, score: docpipe.value / limit, pass: ok, note };
}

/** A yes/no check; `docpipe` is what was seen. */
export function checkRow(scenario: string, check: string, ok: boolean, docpipe: Figure, target: string, note?: string): Row {
  return { scenario, check, docpipe, baseline: null, ratio: null, target, score: ok ? 1 : 0, pass: ok, note };
}

/** A figure reported alongside, judged against nothing. */
export function infoRow(scenario: string, check: string, docpipe: Figure | null, baseline: (Figure & { label: string }) | null, note?: string): Row {
  const ratio = docpipe && baseline && baseline.value > 0 ? docpipe.value / baseline.value : null;
  return { scenario, check, docpipe, baseline, ratio, target: '—', score: null, pass: null, note };
}

/** The non-empty parts of a note, joined; undefined when there are none. */
export function notes(...parts: Array<string | undefined | null | false>): string | undefined {
  const kept = parts.filter((p): p is string => typeof p === 'string' && p !== '');
  return kept.length ? kept.join('; ') : undefined;
}
