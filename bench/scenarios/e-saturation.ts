// E. Saturation: first the pool's capacity is measured (PDF documents per second, closed loop),
// then PDFs are submitted open-loop at 4× that rate while a cheap-path probe runs open-loop at a
// steady rate. The probe's p99 must stay ≤ 50 ms, submits past the pool's high-water mark must
// be answered 202 `capacity` (not queued without bound), and the server's RSS must stay flat
// (the peak of the second half of the flood ≤ the first half's + 64 MB).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Pool } from 'undici';
import { openLoop, openLoopInThread } from '../load.js';
import { fileBody } from '../client.js';
import { apiThroughput } from '../throughput.js';
import { POOL_THREADS } from '../docpipe.js';
import { MB, sampleRss, thin } from '../rss.js';
import { atMostRow, checkRow, type Scenario } from '../types.js';
import { oneKbJson } from './a-cheap.js';
import { metricSum } from '../../src/server/metrics.js';
import { pdfCorpus } from './b-pdf.js';

/** A probe, not load: well under what the cheap path serves on its own (scenario A). */
const PROBE_RATE = 20;
const RSS_GROWTH_LIMIT_MB = 64;

export const saturation: Scenario = {
  id: 'E',
  title: 'saturation',
  async run(ctx) {
    const S = 'E saturation';
    const { files, source } = await pdfCorpus(ctx);
    const floodMs = ctx.quick ? 1_000 : 15_000;
    const inst = await ctx.bench.start();
    try {
      ctx.log(`E: measuring the pool's capacity on ${files.length} PDFs (${source})`);
      const cap = await apiThroughput(inst.origin, ctx.bench.key, 'pdf', files, {
        concurrency: POOL_THREADS * 2, minSeconds: ctx.quick ? 0 : 4, unit: () => 1, warmup: ctx.quick ? 0 : 2,
      });
      const capacity = cap.rate > 0 ? cap.rate : 1;
      const rate = 4 * capacity;
      ctx.log(`E: capacity ${capacity.toFixed(2)} docs/s; flooding at ${rate.toFixed(2)} docs/s for ${floodMs} ms with a ${PROBE_RATE} req/s probe`);

      const bodies = files.map((f) => fileBody(f));
      const reasons: Record<string, number> = {};
      const key = ctx.bench.key;
      // prom-client's event-loop delay histogram restarts at every scrape: this one opens the window.
      await eventLoopDelay(inst.origin);
      const rss = sampleRss(inst.pid, 100);
      // This process's own event-loop delay while it sends the flood (reported beside the probe
      // thread's, which times the probes).
      const own = monitorEventLoopDelay({ resolution: 1 });
      own.enable();
      const [flood, probe] = await Promise.all([
        openLoop({
          origin: inst.origin, connections: 512, durationMs: floodMs, rate, keepBody: true,
          request: (i) => {
            const b = bodies[i % bodies.length]!;
            return { method: 'POST', path: '/v1/convert/pdf?wait=10', headers: { 'x-api-key': key, 'content-type': b.contentType }, body: b.body };
          },
          ok: (a) => a.status === 200 || a.status === 202,
          onAnswer: (a) => {
            let tag = String(a.status);
            try {
              const reason = (JSON.parse(a.body) as { async_reason?: string | null; error?: string }).async_reason;
              if (reason) tag += ` ${reason}`;
              else if (a.status >= 400) tag += ` ${(JSON.parse(a.body) as { error?: string }).error}`;
            } catch {
              // not JSON: the status alone
            }
            reasons[tag] = (reasons[tag] ?? 0) + 1;
          },
        }),
        // The probe in a thread of its own: its timings carry the server's stalls, not the
        // flood generator's (the note gives both loops' delays).
        openLoopInThread({
          origin: inst.origin, connections: 16, durationMs: floodMs, rate: PROBE_RATE,
          request: { method: 'POST', path: '/v1/convert/markdown/html', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: oneKbJson() },
          okStatus: 200,
        }),
      ]);
      const samples = rss.stop();
      own.disable();
      const loop = await eventLoopDelay(inst.origin);
      const half = floodMs / 2;
      const peakOf = (xs: typeof samples) => Math.max(0, ...xs.map((s) => s.rss));
      const first = peakOf(samples.filter((s) => s.t <= half));
      const second = peakOf(samples.filter((s) => s.t > half));
      const growthMb = (second - first) / MB;
      const capacityAnswers = reasons['202 capacity'] ?? 0;
      await cancelLeftovers(inst.origin, key);
      const probeNote = `p50 ${probe.p50.toFixed(1)} ms; ${probe.ok} of ${probe.count} probes 200; `
        + `server event-loop delay p99 ${loop.p99Ms.toFixed(0)} ms, max ${loop.maxMs.toFixed(0)} ms; `
        + `probe thread's own event-loop delay p99 ${probe.ownDelay.p99Ms.toFixed(0)} ms, max ${probe.ownDelay.maxMs.toFixed(0)} ms; `
        + `flood generator's p99 ${(own.percentile(99) / 1e6).toFixed(0)} ms, max ${(own.max / 1e6).toFixed(0)} ms`;
      return {
        rows: [
          atMostRow(S, 'cheap-path probe p99 under flood', { value: probe.p99, unit: 'ms' }, 50, probeNote),
          checkRow(S, 'overflow answered 202 capacity', capacityAnswers > 0, { value: capacityAnswers, unit: 'answers' }, '> 0',
            `${flood.histogram.count} submits at ${rate.toFixed(1)}/s: ${Object.entries(reasons).map(([k, v]) => `${k} ×${v}`).join(', ')}`),
          checkRow(S, 'RSS flat (2nd-half peak − 1st-half peak)', growthMb <= RSS_GROWTH_LIMIT_MB, { value: growthMb, unit: 'MB', signed: true },
            `≤ ${RSS_GROWTH_LIMIT_MB} MB`, `peak ${Math.round(Math.max(first, second) / MB)} MB`),
        ],
        raw: {
          corpus: { source, files: files.length }, capacity_docs_per_s: capacity, capacity_run: cap, flood_rate: rate,
          flood: { statuses: flood.statuses, reasons, errors: flood.errors, p50_ms: flood.p50, p99_ms: flood.p99, samples: flood.samples },
          probe: { rate: PROBE_RATE, ok: probe.ok, statuses: probe.statuses, p50_ms: probe.p50, p99_ms: probe.p99, max_ms: probe.max },
          event_loop_delay: { p99_ms: loop.p99Ms, max_ms: loop.maxMs },
          load_generator_event_loop_delay: { p99_ms: own.percentile(99) / 1e6, max_ms: own.max / 1e6 },
          probe_thread_event_loop_delay: { p99_ms: probe.ownDelay.p99Ms, max_ms: probe.ownDelay.maxMs },
          rss_mb: thin(samples), rss_first_half_peak_mb: first / MB, rss_second_half_peak_mb: second / MB,
        },
      };
    } finally {
      await inst.stop();
    }
  },
};

/** The server's event-loop delay since the last scrape of /metrics (prom-client's monitor). */
async function eventLoopDelay(origin: string): Promise<{ p99Ms: number; maxMs: number }> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const read = (name: string): number => metricSum(text, `docpipe_nodejs_eventloop_lag_${name}_seconds`) * 1000;
  return { p99Ms: read('p99'), maxMs: read('max') };
}

/** Deletes the flood's conversions still queued or running (the newest 1,000), so the server
 *  has nothing left to finish when it is stopped. */
async function cancelLeftovers(origin: string, key: string): Promise<void> {
  const pool = new Pool(origin, { connections: 4 });
  try {
    const open: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page++) {
      const res = await pool.request({ method: 'GET', path: `/v1/conversions?limit=100${cursor ? `&cursor=${cursor}` : ''}`, headers: { 'x-api-key': key } });
      const list = (await res.body.json()) as { data?: Array<{ id: string; status: string }>; next_cursor?: string | null };
      open.push(...(list.data ?? []).filter((c) => c.status === 'queued' || c.status === 'running').map((c) => c.id));
      cursor = list.next_cursor ?? null;
      if (!cursor) break;
    }
    await Promise.all(open.map(async (id) => {
      const r = await pool.request({ method: 'DELETE', path: `/v1/conversions/${id}`, headers: { 'x-api-key': key } });
      await r.body.dump();
    }));
  } finally {
    await pool.close();
  }
}
