// The bench's outputs: the one table (terminal text and Markdown for the README) and the chart
// of a run as SVG, drawn here by hand: one bar per checked row showing how far its target is met
// (100 % = exactly on target), green when it passes, red when it does not.
import type { Figure, Row } from './types.js';

export function fmtNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v)) return v.toLocaleString('en-US');
  const a = Math.abs(v);
  if (a >= 1000) return Math.round(v).toLocaleString('en-US');
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function fig(f: Figure | null): string {
  return f ? `${fmtNumber(f.value)} ${f.unit}` : '—';
}

function verdict(r: Row): string {
  if (r.pass === null) return r.target === '—' ? 'info' : 'skipped';
  return r.pass ? 'PASS' : 'FAIL';
}

export function cells(r: Row): string[] {
  return [
    r.scenario,
    r.check,
    fig(r.docpipe),
    r.baseline ? `${fig(r.baseline)} (${r.baseline.label})` : '—',
    r.ratio === null ? '—' : `${r.ratio >= 10 ? r.ratio.toFixed(1) : r.ratio.toFixed(2)}×`,
    r.target,
    verdict(r),
  ];
}

const HEAD = ['scenario', 'check', 'docpipe', 'baseline', 'ratio', 'target', 'result'];

/** The table for the terminal: aligned columns, notes under it. */
export function textTable(rows: Row[]): string {
  const all = [HEAD, ...rows.map(cells)];
  const widths = HEAD.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  const out = [line(HEAD), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map((r) => line(cells(r)))];
  const notes = rows.filter((r) => r.note).map((r) => `  ${r.scenario} / ${r.check}: ${r.note}`);
  if (notes.length) out.push('', 'notes:', ...notes);
  return out.join('\n');
}

/** The same table in Markdown (README's Benchmarks section). */
export function markdownTable(rows: Row[]): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const out = [`| ${HEAD.join(' | ')} |`, `|${HEAD.map(() => '---').join('|')}|`];
  for (const r of rows) out.push(`| ${cells(r).map(esc).join(' | ')} |`);
  return out.join('\n');
}

function xml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A horizontal bar chart of every judged row's score, capped at 200 % of its target. */
export function svgChart(rows: Row[], meta: { title: string; subtitle: string }): string {
  const judged = rows.filter((r) => r.score !== null || r.pass !== null);
  const labelW = 300;
  const barW = 420;
  const valueW = 260;
  const rowH = 26;
  const top = 70;
  const width = labelW + barW + valueW + 20;
  const height = top + judged.length * rowH + 40;
  const cap = 2;
  const x = (s: number) => labelW + (Math.min(Math.max(s, 0), cap) / cap) * barW;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="10" y="22" font-size="16" font-weight="bold">${xml(meta.title)}</text>`,
    `<text x="10" y="42" fill="#555">${xml(meta.subtitle)}</text>`,
    `<text x="${labelW}" y="${top - 8}" fill="#555">0</text>`,
    `<text x="${x(1) - 30}" y="${top - 8}" fill="#555">target</text>`,
    `<text x="${labelW + barW - 36}" y="${top - 8}" fill="#555">≥ 2×</text>`,
  ];
  judged.forEach((r, i) => {
    const y = top + i * rowH;
    const colour = r.pass === null ? '#9e9e9e' : r.pass ? '#2e7d32' : '#c62828';
    const score = r.score ?? 0;
    parts.push(`<text x="${labelW - 8}" y="${y + 16}" text-anchor="end">${xml(`${r.scenario.split(' ')[0]} ${r.check}`)}</text>`);
    parts.push(`<rect x="${labelW}" y="${y + 5}" width="${Math.max(1, x(score) - labelW).toFixed(1)}" height="${rowH - 10}" fill="${colour}"/>`);
    const c = cells(r);
    parts.push(`<text x="${labelW + barW + 8}" y="${y + 16}" fill="#333">${xml(`${c[2]}${r.ratio !== null ? ` (${c[4]})` : ''} — ${c[6]}`)}</text>`);
  });
  parts.push(`<line x1="${x(1)}" y1="${top - 4}" x2="${x(1)}" y2="${top + judged.length * rowH}" stroke="#000" stroke-dasharray="4 3"/>`);
  parts.push(`<text x="10" y="${height - 14}" fill="#555">Bar = share of the target reached (ratio ÷ required ratio, or limit ÷ measured for ceilings); dashed line = target.</text>`);
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
