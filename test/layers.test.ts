// The layering of src/ (scripts/layers.mjs says it once): no import reaches up or sideways, no
// file imports itself through others. Checked on the real tree, and on a small made-up one to show
// the check finds each kind of break.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
// @ts-expect-error: a plain ES module of the scripts, without type declarations
import { checkLayers } from '../scripts/layers.mjs';

const check = checkLayers as (root: string) => string[];
const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');

t.test('src/ imports only downward and has no import cycle', async (t) => {
  t.same(check(src), [], 'no upward or sideways import, no cycle');
});

t.test('the check finds an upward import, a sideways one, a cycle and an unplaced folder', async (t) => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'docpipe-layers-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const files: Record<string, string> = {
    'server/app.ts': "import { a } from '../jobs/a.js';\nexport const app = a;\n",
    'jobs/a.ts': "import type { X } from '../types.js';\nexport const a = 1 as X;\n",
    'types.ts': 'export type X = number;\n',
    'store/rows.ts': "import { app } from '../server/app.js';\nexport const rows = app;\n",
    'converters/pdf.ts': "export { rows } from '../store/rows.js';\n",
    'webhooks/one.ts': "import { two } from './two.js';\nexport const one = () => two;\n",
    'webhooks/two.ts': "export const two = async () => (await import('./one.js')).one;\n",
    'extras/thing.ts': 'export const thing = 1;\n',
  };
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
  }
  const problems = check(root);
  t.same(problems.sort(), [
    'converters/pdf.ts imports store/rows.ts: converters and store are beside each other',
    'extras/thing.ts: "extras" has no place in LAYERS (scripts/layers.mjs)',
    'import cycle: webhooks/one.ts -> webhooks/two.ts',
    'store/rows.ts imports server/app.ts: store is below server',
  ].sort(), 'each break is named, and downward imports (server -> jobs -> types) pass');
});
