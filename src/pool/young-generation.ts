// Each thread's young generation, as its own settings say. `npm start` gives the main thread
// 32 MB semi-spaces with node's `--max-semi-space-size=32` (a main thread's heap is sized when node
// starts, before any code runs). V8 reads that flag again for every isolate made after, and when it
// is set it overrides the size a worker thread asks for in its resourceLimits: the converter
// threads, made with WORKER_YOUNG_MB (192 MB: 64 MB semi-spaces), got the main thread's 32 MB ones,
// and WORKER_YOUNG_MB changed nothing (in a thread started under the flag, V8's new space stayed at
// 64 MB where 192 MB asks for 128). Once the main thread's heap exists the flag has done its work,
// so the code that starts threads clears it first; the acceptor threads, which took the main
// thread's size from the flag, are given it in their resourceLimits instead.
import v8 from 'node:v8';

/** The semi-space size (MB) that `--max-semi-space-size` sets in these node options, if any (the
 *  last one counts, as in V8; `=N` or a separate value; dashes or underscores). */
export function semiSpaceFlagMb(args: readonly string[]): number | undefined {
  let mb: number | undefined;
  for (let i = 0; i < args.length; i++) {
    const m = /^--max[-_]semi[-_]space[-_]size(?:=(.*))?$/.exec(args[i]!);
    if (!m) continue;
    const value = Number(m[1] ?? args[++i]);
    mb = Number.isFinite(value) && value > 0 ? value : undefined;
  }
  return mb;
}

/** The options node started with: NODE_OPTIONS, then its command line (which wins over them). */
function nodeOptions(): string[] {
  return [...(process.env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean), ...process.execArgv];
}

/** The young generation (MB) the flag gave this process's main thread: V8 sizes it as two
 *  semi-spaces and a new large-object space as big as one. Undefined without the flag. */
export function mainYoungGenerationMb(args: readonly string[] = nodeOptions()): number | undefined {
  const semi = semiSpaceFlagMb(args);
  return semi === undefined ? undefined : 3 * semi;
}

/** Clears `--max-semi-space-size` so that every thread started from now on takes the young
 *  generation its resourceLimits give (or V8's default). Idempotent; the main thread keeps its heap. */
export function letThreadsSizeTheirYoungGeneration(): void {
  if (semiSpaceFlagMb(nodeOptions()) !== undefined) v8.setFlagsFromString('--max-semi-space-size=0');
}
