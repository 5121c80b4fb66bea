// A module a converter loads on first use, where conversions run (a pool thread), never where
// it is only named (the event loop picks converters by kind and sniffs sources without them).

/**
 * `load` run once and its promise kept: every import() goes through the module loader again,
 * and under tsx through its resolve hook on a thread of its own (a PDF's count and conversion
 * each paid about 1 ms of the pool thread and 2 of the hook thread for it). A load that failed
 * is not kept: the next call tries again.
 */
export function lazyModule<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => (loaded ??= load().catch((err: unknown) => {
    loaded = undefined;
    throw err;
  }));
}
