// The converter pool (DESIGN.md §1), what this folder offers:
// - pool.ts     PoolExecutor: the Executor (jobs/executor.ts) that runs each conversion on a
//               piscina thread, with time, memory and cancellation limits
// - worker.ts   the pool thread's entry (and worker-tsx.mjs, its bootstrap under tsx)
// - scratch.ts  the per-task scratch folders and their sweep
// May import: jobs (the Executor seam it implements), and everything below jobs; never server or
// cli (scripts/layers.mjs).
export { PoolExecutor, DEFAULT_HEAP_MB, type PoolOptions, type PoolTask } from './pool.js';
export { sweepScratch } from './scratch.js';
