// `npm run chaos -- [--minutes N] [--seed N] [--workers N] [--keep]`: two docpipe instances on
// one Postgres (a schema of their own) and a private Redis, under mixed load for N minutes
// (default 2) while instances are SIGKILLed and started again and Redis is killed and started
// again empty, at random; then the invariants, printed as a table (bench/chaos/run.ts says what
// is checked). Exits 1 when an invariant is broken (the schema, data and logs are then kept).
// The same seed replays the same choices of requests and faults (their timing still varies).
import { parseArgs } from 'node:util';
import { runChaos } from './chaos/run.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '2' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    workers: { type: 'string', default: '6' },
    keep: { type: 'boolean', default: false },
  },
});
const minutes = Number(values.minutes);
if (!(minutes > 0)) throw new Error('--minutes must be a positive number');

const result = await runChaos({ minutes, seed: Number(values.seed), workers: Number(values.workers), keep: values.keep });
console.log(result.report);
if (result.kept) console.log(`\nkept: ${result.kept}`);
process.exit(result.violations > 0 ? 1 : 0);
