// The probe thread's entry (load.ts openLoopInThread). The bench runs under tsx, whose ESM hooks
// a worker thread on Node 20 does not inherit: register them when the .ts import fails (as
// src/server/acceptor-thread-tsx.mjs does), then load the thread's module.
try {
  await import('./probe-thread.ts');
} catch (err) {
  if (err?.code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
  const { register } = await import('tsx/esm/api');
  register();
  await import('./probe-thread.ts?tsx');
}
