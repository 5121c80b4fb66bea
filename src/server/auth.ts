// Who is calling: the API key from x-api-key or Authorization: Bearer, resolved to an account,
// its plan and the key's scopes (DESIGN.md §2). Lookups are cached for a few seconds so the hot
// path does not query the database on every request; a revoked key stops working within TTL_MS.
import { ApiError } from '../errors.js';
import type { Sql } from '../store/db.js';
import { findKey, hashKey, KEY_CACHE_S, type KeyRecord, type Principal, type Scope } from '../store/accounts.js';

const TTL_MS = KEY_CACHE_S * 1000;
const MAX_CACHED = 10_000;

export class Authenticator {
  private cache = new Map<string, { at: number; rec: KeyRecord | undefined }>();

  constructor(private sql: Sql) {}

  async authenticate(headers: Record<string, string>): Promise<Principal> {
    const key = keyFrom(headers);
    if (!key) throw new ApiError('unauthorized', 'No API key: send it in x-api-key or as Authorization: Bearer <key>.');
    const h = hashKey(key);
    const now = Date.now();
    const hit = this.cache.get(h);
    let rec: KeyRecord | undefined;
    if (hit && now - hit.at < TTL_MS) rec = hit.rec;
    else {
      rec = await findKey(this.sql, key);
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      this.cache.set(h, { at: now, rec });
    }
    if (!rec) throw new ApiError('unauthorized', 'The API key is unknown or revoked.');
    return rec;
  }

  /** Forgets cached lookups (after a key is revoked or a plan changes in-process). */
  invalidate(): void {
    this.cache.clear();
  }
}

function keyFrom(headers: Record<string, string>): string | undefined {
  const direct = headers['x-api-key']?.trim();
  if (direct) return direct;
  const auth = headers.authorization?.trim();
  if (!auth) return undefined;
  const m = /^Bearer\s+(\S+)$/i.exec(auth);
  return m ? m[1] : undefined;
}

export function requireScope(p: Principal, scope: Scope): void {
  if (!p.scopes.includes(scope)) throw new ApiError('scope_missing', `This key lacks the "${scope}" scope.`);
}

/** API access needs an active Lite, Pro or Max subscription. */
export function requireSubscription(p: Principal): void {
  if (p.plan === 'free' || p.subscription !== 'active') {
    throw new ApiError('subscription_required', `The account's plan is ${p.plan} (${p.subscription}); API access needs an active Lite, Pro or Max subscription.`);
  }
}
