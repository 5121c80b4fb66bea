// Accounts and API keys. A key is shown once at creation; only its SHA-256 is stored.
import { createHash } from 'node:crypto';
import type { Sql } from './db.js';
import { newId, randomToken } from './ids.js';

export const SCOPES = ['read', 'convert', 'uploads', 'webhooks'] as const;
export type Scope = (typeof SCOPES)[number];
export const PLANS = ['free', 'lite', 'pro', 'max'] as const;
export type Plan = (typeof PLANS)[number];
export type Subscription = 'active' | 'canceled' | 'past_due';

export interface Account {
  id: string;
  name: string;
  plan: Plan;
  subscription: Subscription;
}

export interface KeyRecord {
  keyId: string;
  accountId: string;
  plan: Plan;
  subscription: Subscription;
  scopes: Scope[];
}

/** The authenticated caller of a request: its key's record. */
export type Principal = KeyRecord;

/** How long a server caches a key lookup: a revoked key keeps working this long in a running
 *  server (README and the CLI's `keys revoke` say so). */
export const KEY_CACHE_S = 5;

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export async function createAccount(sql: Sql, a: { name: string; plan: Plan; subscription?: Subscription }): Promise<Account> {
  const account: Account = { id: newId('acct'), name: a.name, plan: a.plan, subscription: a.subscription ?? 'active' };
  await sql`insert into accounts (id, name, plan, subscription)
            values (${account.id}, ${account.name}, ${account.plan}, ${account.subscription})`;
  return account;
}

export async function getAccount(sql: Sql, id: string): Promise<Account | undefined> {
  const [row] = await sql`select id, name, plan, subscription from accounts where id = ${id}`;
  return row as Account | undefined;
}

export async function listAccounts(sql: Sql): Promise<Account[]> {
  return (await sql`select id, name, plan, subscription from accounts order by created_at, id`) as unknown as Account[];
}

export async function updateAccount(sql: Sql, id: string, change: { plan?: Plan; subscription?: Subscription }): Promise<boolean> {
  const rows = await sql`update accounts set
      plan = coalesce(${change.plan ?? null}, plan),
      subscription = coalesce(${change.subscription ?? null}, subscription)
    where id = ${id} returning id`;
  return rows.length === 1;
}

/** Creates a key and returns it in clear text: the only time it is ever seen. */
export async function createKey(sql: Sql, accountId: string, scopes: readonly Scope[]): Promise<{ id: string; key: string }> {
  const key = `dp_live_${randomToken(32)}`;
  const id = newId('key');
  await sql`insert into api_keys (id, account_id, key_hash, prefix, scopes)
            values (${id}, ${accountId}, ${hashKey(key)}, ${key.slice(0, 12)}, ${sql.array(scopes as string[])})`;
  return { id, key };
}

export async function revokeKey(sql: Sql, keyId: string): Promise<boolean> {
  const rows = await sql`update api_keys set revoked_at = now() where id = ${keyId} and revoked_at is null returning id`;
  return rows.length === 1;
}

export async function findKey(sql: Sql, key: string): Promise<KeyRecord | undefined> {
  const [row] = await sql`
    select k.id as key_id, k.account_id, k.scopes, a.plan, a.subscription
    from api_keys k join accounts a on a.id = k.account_id
    where k.key_hash = ${hashKey(key)} and k.revoked_at is null`;
  if (!row) return undefined;
  return {
    keyId: row.key_id as string,
    accountId: row.account_id as string,
    scopes: row.scopes as Scope[],
    plan: row.plan as Plan,
    subscription: row.subscription as Subscription,
  };
}
