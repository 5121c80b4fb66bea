// The acceptor thread's entry when docpipe runs from its TypeScript sources (`tsx src/main.ts`);
// acceptors.ts picks it only then. As for the pool's threads (src/pool/worker-tsx.mjs), a
// worker thread on Node 20 inherits tsx's CommonJS hooks but not its ESM ones: register them
// when a .ts import fails, then load the thread's module.
try {
  await import('./acceptor-thread.ts');
} catch (err) {
  if (err?.code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
  const { register } = await import('tsx/esm/api');
  register();
  // The failed load above stays cached under its URL: ask again under another one.
  await import('./acceptor-thread.ts?tsx');
}
