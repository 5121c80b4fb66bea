// The pool thread's entry when docpipe runs from its TypeScript sources (`tsx src/main.ts`,
// `node --import=tsx`); pool.ts picks it only then. Worker threads inherit the process's
// execArgv, which gives them tsx's CommonJS hooks but, on Node 20, not its ESM hooks (tsx only
// registers those in worker threads on newer Node versions). The converters are loaded with
// import(), so this thread registers tsx's ESM hooks itself when a .ts import fails, then hands
// piscina the handler of worker.ts.
//
// No static imports on purpose: piscina first tries require() on this file, and the top-level
// await makes that fail before anything runs, so piscina falls back to import() and worker.ts
// and every converter load as ES modules, once per thread.
let mod;
try {
  mod = await import('./worker.ts');
} catch (err) {
  if (err?.code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
  const { register } = await import('tsx/esm/api');
  register();
  // The failed load above stays cached under its URL: ask again under another one.
  mod = await import('./worker.ts?tsx');
}

export default mod.default;
