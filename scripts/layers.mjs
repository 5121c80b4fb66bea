// The layering of src/, written once: each layer may import the layers below it and files of its
// own folder, never a layer above it or a folder beside it; no two files import each other, even
// through others. test/layers.test.ts runs this on every `npm test`; run it alone with
// `node scripts/layers.mjs` to list what breaks the rule.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * From the top down. An entry is a folder of src/ or a file at src/'s root (without `.ts`);
 * entries of one row are beside each other (neither imports the other).
 */
export const LAYERS = [
  ['main'],
  ['cli', 'server'],
  ['pool'],
  ['jobs'],
  ['uploads'],
  ['webhooks'],
  ['billing'],
  ['converters', 'store'],
  ['net'],
  // The bottom: the domain's types and the process's configuration, errors and logging. These
  // root files may import one another (without a cycle).
  ['types', 'plans', 'config', 'errors', 'log'],
];
const BOTTOM = LAYERS.length - 1;

/** The layer entry of a file under `root`: its top folder, or its name for a root file. */
function entryOf(root, file) {
  const [first, ...rest] = path.relative(root, file).split(path.sep);
  return rest.length > 0 ? first : first.replace(/\.(m?ts|mjs|js)$/, '');
}

function rankOf(entry) {
  return LAYERS.findIndex((row) => row.includes(entry));
}

function sourceFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|mts)$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

// Static imports and re-exports (`import … from`, `import type …`, `export … from`, bare
// `import '…'`) and dynamic `import('…')`, of relative paths.
const IMPORT = /(?:^|[^\w.])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** The files of the project `file` imports, resolved to paths (a `.js` specifier names its `.ts`). */
function importsOf(file) {
  const text = readFileSync(file, 'utf8');
  const out = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2];
    let target = path.resolve(path.dirname(file), spec);
    if (target.endsWith('.js')) target = target.slice(0, -3) + '.ts';
    else if (target.endsWith('.mjs')) target = target.slice(0, -4) + '.mts';
    out.push(target);
  }
  return out;
}

/**
 * Checks the files under `root` against LAYERS: returns one line per upward or sideways import,
 * per file or folder LAYERS does not place, and per import cycle. Empty when all is well.
 */
export function checkLayers(root) {
  const problems = [];
  const files = sourceFiles(root);
  const graph = new Map(files.map((f) => [f, importsOf(f)]));
  const rel = (f) => path.relative(root, f);
  for (const [file, targets] of graph) {
    const from = entryOf(root, file);
    const fromRank = rankOf(from);
    if (fromRank < 0) {
      problems.push(`${rel(file)}: "${from}" has no place in LAYERS (scripts/layers.mjs)`);
      continue;
    }
    for (const target of targets) {
      if (!graph.has(target)) continue;
      const to = entryOf(root, target);
      if (to === from) continue;
      const toRank = rankOf(to);
      if (toRank < 0) continue; // reported as its own file
      if (toRank < fromRank) problems.push(`${rel(file)} imports ${rel(target)}: ${from} is below ${to}`);
      else if (toRank === fromRank && fromRank !== BOTTOM) problems.push(`${rel(file)} imports ${rel(target)}: ${from} and ${to} are beside each other`);
    }
  }
  for (const cycle of cycles(graph)) problems.push(`import cycle: ${cycle.map(rel).join(' -> ')}`);
  return problems;
}

/** The strongly connected groups of more than one file (Tarjan), each as a list of its files. */
function cycles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  let next = 0;
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), index.get(w)));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const group = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1) found.push(group.reverse());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');
  const problems = checkLayers(root);
  for (const p of problems) console.log(p);
  console.log(problems.length === 0 ? 'src/ keeps its layers' : `${problems.length} problem(s)`);
  process.exit(problems.length === 0 ? 0 : 1);
}
