// What the route handlers are given: one object built at start-up (see app.ts).
import type { Config } from '../config.js';
import type { Db } from '../store/db.js';
import type { Blobs } from '../store/blobs.js';
import type { Authenticator, Principal } from './auth.js';
import type { ConversionService } from '../jobs/service.js';
import type { Logger } from '../log.js';
import type { Ctx } from './respond.js';

export interface Deps {
  config: Config;
  db: Db;
  blobs: Blobs;
  auth: Authenticator;
  conversions: ConversionService;
  log: Logger;
}

/** Authenticates the request and remembers the principal on the context (for logs). */
export async function principalOf(deps: Deps, ctx: Ctx): Promise<Principal> {
  const p = await deps.auth.authenticate(ctx.headers);
  ctx.principal = p;
  return p;
}
