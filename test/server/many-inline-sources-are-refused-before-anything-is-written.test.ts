// A JSON body naming more inline sources than a request may hold (99,000 texts) is counted and
// refused with 400 before any of them is staged: nothing is written under DATA_DIR (temp files,
// blobs), for a conversion or an estimate. A body at the limit still converts. One world mode:
// the store plays no part in staging.
import t from 'tap';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { MODES, startWorld } from '../helpers/world.js';
import { MAX_SOURCES } from '../../src/server/convert-request.js';

/** Every file under `dir` (relative paths), except the embedded database's own. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .filter((p) => !p.startsWith(`pg${path.sep}`))
    .sort();
}

t.test(`99,000 inline sources are refused before anything is written (${MODES[0]})`, async (t) => {
  const w = await startWorld(MODES[0]!, { SWEEP_INTERVAL_S: '0' });
  t.teardown(() => w.close());
  const a = await w.newKey({ credits: 1000 });
  const before = filesUnder(w.dataDir);
  const many = Array.from({ length: 99_000 }, () => 'a');
  // Staging is watched while the requests run: a file written and removed again also counts.
  const seen = new Set<string>();
  const watcher = setInterval(() => { for (const f of filesUnder(w.dataDir)) if (!before.includes(f)) seen.add(f); }, 5);
  try {
    for (const [endpoint, json] of [
      ['/v1/convert/text', { texts: many }],
      ['/v1/convert/text/estimate', { texts: many }],
      ['/v1/convert/html', { htmls: many }],
      ['/v1/convert/markdown/html', { texts: many }],
    ] as const) {
      const res = await w.req('POST', endpoint, { key: a.key, json });
      t.equal(res.status, 400, `${endpoint}: 400`);
      const p = await res.json() as { error: string; detail: string };
      t.equal(p.error, 'invalid_request');
      t.match(p.detail, `At most ${MAX_SOURCES} sources per request; got 99000.`, `${endpoint}: says how many were sent`);
    }
  } finally {
    clearInterval(watcher);
  }
  t.same([...seen], [], 'no file was written while the requests were refused');
  t.same(filesUnder(w.dataDir), before, 'nothing was left under DATA_DIR');
  const [{ n }] = await w.db.sql<Array<{ n: number }>>`select count(*)::int as n from conversions where account_id = ${a.accountId}`;
  t.equal(n, 0, 'no conversion was created');

  const atLimit = await w.req('POST', '/v1/convert/text', { key: a.key, json: { texts: Array.from({ length: MAX_SOURCES }, (_, i) => `text ${i}`) }, headers: { prefer: 'respond-async' } });
  t.equal(atLimit.status === 200 || atLimit.status === 202, true, `${MAX_SOURCES} sources are accepted (${atLimit.status})`);
  const c = await atLimit.json() as { summary: { sources: number } };
  t.equal(c.summary.sources, MAX_SOURCES, 'with every source');
});
