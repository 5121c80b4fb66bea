// Regression tests for what the chaos run (npm run chaos) found.
// - A process SIGKILLed mid-request or mid-conversion leaves its temp files in DATA_DIR/tmp,
//   which every process shares, and nothing removed them: the retention sweeper now removes
//   entries untouched for an hour, and leaves younger ones (a live request's) alone.
import t from 'tap';
import { mkdirSync, utimesSync, writeFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { startWorld } from '../helpers/world.js';
import { Sweeper, TEMP_MAX_AGE_MS } from '../../src/uploads/sweeper.js';
import { createLogger } from '../../src/log.js';

t.test('temp files left by a killed process are swept once an hour old; live ones stay', async (t) => {
  const w = await startWorld('postgres', { SWEEP_INTERVAL_S: '0' });
  t.teardown(() => w.close());
  const tmp = w.app.deps.blobs.tmpDir;
  const old = (Date.now() - TEMP_MAX_AGE_MS - 60_000) / 1000;
  // What a killed request and a killed conversion leave: a body received half-way, a scratch dir.
  writeFileSync(path.join(tmp, 'up_left-by-a-killed-request'), 'half a body');
  mkdirSync(path.join(tmp, 'task_left-by-a-killed-conversion'));
  writeFileSync(path.join(tmp, 'task_left-by-a-killed-conversion', 'page-1.png'), 'scratch');
  utimesSync(path.join(tmp, 'up_left-by-a-killed-request'), old, old);
  utimesSync(path.join(tmp, 'task_left-by-a-killed-conversion'), old, old);
  writeFileSync(path.join(tmp, 'up_being-received-now'), 'a live body');

  const counts = await new Sweeper(w.db.sql, w.app.deps.blobs, createLogger('silent'), { intervalS: 0 }).sweepOnce();
  t.equal(counts.temp, 2, 'two stale entries removed');
  t.same(readdirSync(tmp), ['up_being-received-now'], 'the live one is still there');
});
