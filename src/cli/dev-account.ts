// The development account of embedded mode: created on the first start only.
import type { Sql } from '../store/db.js';
import { createAccount, createKey, listAccounts, SCOPES, type Plan } from '../store/accounts.js';
import { grantCredits } from '../billing/ledger.js';

/** Credits the development account starts with. */
export const DEV_CREDITS = 10_000;

export async function ensureDevAccount(sql: Sql): Promise<{ accountId: string; key: string; plan: Plan; credits: number } | undefined> {
  if ((await listAccounts(sql)).length > 0) return undefined;
  const account = await createAccount(sql, { name: 'Development', plan: 'pro' });
  const { key } = await createKey(sql, account.id, SCOPES);
  await grantCredits(sql, account.id, DEV_CREDITS, 'development account');
  return { accountId: account.id, key, plan: account.plan, credits: DEV_CREDITS };
}
