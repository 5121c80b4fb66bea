// An open-loop load in a worker thread of its own (openLoopInThread, load.ts): scenario E's
// probe, timed on an event loop that the flood's 512 connections and their bodies do not share.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { openLoop, type ThreadLoad } from './load.js';

const load = workerData as ThreadLoad;
const own = monitorEventLoopDelay({ resolution: 1 });
own.enable();
const r = await openLoop({
  origin: load.origin, connections: load.connections, durationMs: load.durationMs, rate: load.rate,
  request: () => load.request, ok: (a) => a.status === load.okStatus,
});
own.disable();
const { histogram, ...rest } = r;
parentPort!.postMessage({ ...rest, count: histogram.count, ownDelay: { p99Ms: own.percentile(99) / 1e6, maxMs: own.max / 1e6 } });
