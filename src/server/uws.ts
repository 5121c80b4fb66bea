// Loading uWebSockets.js, once per thread that serves HTTP.
import { createRequire } from 'node:module';

export type Uws = typeof import('uWebSockets.js');

/** Loads uWebSockets.js and refuses its silent pure-JS fallback: it is far slower. */
export function loadUws(): Uws {
  const require = createRequire(import.meta.url);
  const uws = require('uWebSockets.js') as Uws & { SSLApp?: unknown };
  if (typeof uws.SSLApp !== 'function' || process.env.UWS_USE_FALLBACK) {
    throw new Error('uWebSockets.js did not load its native binary for this platform/Node.js '
      + `(${process.platform}-${process.arch}, ABI ${process.versions.modules}); refusing the slow JS fallback.`);
  }
  return uws;
}
