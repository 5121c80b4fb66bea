// The docpipe command line. Admin commands work against the same store as the server: the
// Postgres of DATABASE_URL, or the embedded database under DATA_DIR (stop an embedded server
// first: PGlite takes one process at a time).
// May import: every layer below server (store, billing, …; scripts/layers.mjs), never server.
import { loadConfig } from '../config.js';
import { openDb, type Db } from '../store/db.js';
import {
  createAccount, createKey, getAccount, listAccounts, revokeKey, updateAccount, KEY_CACHE_S, PLANS, SCOPES, type Plan, type Scope, type Subscription,
} from '../store/accounts.js';
import { grantCredits, readLedger, MAX_GRANT } from '../billing/ledger.js';
import { parseArgs, need, NotFound, UsageError, type Parsed } from './args.js';
import { ApiFailure, clientEnv, convertCommand, estimateCommand } from './client.js';

const USAGE = `Usage: docpipe <command>

Client (DOCPIPE_URL, default http://localhost:8080, and DOCPIPE_API_KEY):
  convert <file|url>... [--to md|html|text|pages] [--out DIR] [--wait] [--kind KIND]
  estimate <file|url>... [--kind KIND]

Admin (DATABASE_URL, or the embedded store under DATA_DIR):
  accounts create --name NAME --plan lite|pro|max|free [--key] [--scopes read,convert,...]
  accounts list
  accounts set --account ID [--plan PLAN] [--subscription active|canceled|past_due]
  keys create --account ID [--scopes read,convert,uploads,webhooks]
  keys revoke --key-id ID
  credits grant --account ID --amount N [--note TEXT]
  credits balance --account ID
`;

type Out = (line: string) => void;

async function withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const db = await openDb({ databaseUrl: config.databaseUrl, schema: config.databaseSchema, dataDir: config.dataDir, max: 2 });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

function scopesOf(p: Parsed): Scope[] {
  const raw = p.flags.scopes;
  if (raw === undefined || raw === true) return [...SCOPES];
  const list = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const s of list) if (!SCOPES.includes(s as Scope)) throw new UsageError(`unknown scope "${s}" (scopes: ${SCOPES.join(', ')})`);
  return list as Scope[];
}

function planOf(v: string): Plan {
  if (!PLANS.includes(v as Plan)) throw new UsageError(`unknown plan "${v}" (plans: ${PLANS.join(', ')})`);
  return v as Plan;
}

export async function admin(p: Parsed, out: Out): Promise<void> {
  const [noun, verb] = p.words;
  const cmd = `${noun ?? ''} ${verb ?? ''}`.trim();
  switch (cmd) {
    case 'accounts create': {
      const plan = planOf(need(p, 'plan'));
      const name = typeof p.flags.name === 'string' ? p.flags.name : 'account';
      await withDb(async (db) => {
        const a = await createAccount(db.sql, { name, plan });
        out(`account ${a.id} plan=${a.plan}`);
        if (p.flags.key) {
          const k = await createKey(db.sql, a.id, scopesOf(p));
          out(`key ${k.id} ${k.key}`);
        }
      });
      return;
    }
    case 'accounts list':
      await withDb(async (db) => {
        for (const a of await listAccounts(db.sql)) out(`${a.id}\t${a.plan}\t${a.subscription}\t${a.name}`);
      });
      return;
    case 'accounts set': {
      const id = need(p, 'account');
      const plan = typeof p.flags.plan === 'string' ? planOf(p.flags.plan) : undefined;
      const sub = typeof p.flags.subscription === 'string' ? p.flags.subscription as Subscription : undefined;
      if (sub && !['active', 'canceled', 'past_due'].includes(sub)) throw new UsageError(`unknown subscription state "${sub}"`);
      const ok = await withDb((db) => updateAccount(db.sql, id, { plan, subscription: sub }));
      if (!ok) throw new NotFound(`no account ${id}`);
      out(`account ${id} updated`);
      return;
    }
    case 'keys create': {
      const id = need(p, 'account');
      const scopes = scopesOf(p);
      const k = await withDb((db) => createKey(db.sql, id, scopes).catch((e: Error) => {
        throw /foreign key/.test(e.message) ? new NotFound(`no account ${id}`) : e;
      }));
      out(`key ${k.id} ${k.key}`);
      out(`scopes ${scopes.join(',')} (the key is shown only now)`);
      return;
    }
    case 'keys revoke': {
      const id = need(p, 'key-id');
      const ok = await withDb((db) => revokeKey(db.sql, id));
      if (!ok) throw new NotFound(`no active key ${id}`);
      out(`key ${id} revoked; running servers may still accept it for up to ${KEY_CACHE_S} s (their key cache)`);
      return;
    }
    case 'credits grant': {
      const id = need(p, 'account');
      const amount = Number(need(p, 'amount'));
      if (!Number.isInteger(amount) || amount <= 0 || amount > MAX_GRANT) throw new UsageError(`--amount must be a whole number from 1 to ${MAX_GRANT}`);
      const note = typeof p.flags.note === 'string' ? p.flags.note : 'admin grant';
      const config = loadConfig();
      await withDb(async (db) => {
        if (!(await getAccount(db.sql, id))) throw new NotFound(`no account ${id}`);
        // With Redis, the gate's copy of a loaded balance moves too; otherwise the next request
        // rebuilds it from the ledger, which already holds the grant.
        await grantCredits(db.sql, id, amount, note, config.redisUrl ? { url: config.redisUrl, prefix: config.redisPrefix } : undefined);
        out(`granted ${amount} credits to ${id}; balance ${(await readLedger(db.sql, id)).balance}`);
      });
      return;
    }
    case 'credits balance': {
      const id = need(p, 'account');
      await withDb(async (db) => {
        if (!(await getAccount(db.sql, id))) throw new NotFound(`no account ${id}`);
        const l = await readLedger(db.sql, id);
        out(`${id} balance ${l.balance} (${l.reservations.length} open reservations)`);
      });
      return;
    }
    default:
      throw new UsageError(`unknown command "${p.words.join(' ')}"`);
  }
}

export async function main(argv: string[], out: Out = (l) => console.log(l), err: Out = (l) => console.error(l)): Promise<number> {
  const p = parseArgs(argv);
  if (p.words.length === 0 || p.flags.help) {
    out(USAGE);
    return p.words.length === 0 && !p.flags.help ? 2 : 0;
  }
  try {
    if (p.words[0] === 'convert') return await convertCommand(p, clientEnv(out));
    if (p.words[0] === 'estimate') return await estimateCommand(p, clientEnv(out));
    await admin(p, out);
    return 0;
  } catch (e) {
    if (e instanceof ApiFailure || e instanceof NotFound) {
      err(`docpipe: ${e.message}`);
      return 1;
    }
    if (e instanceof UsageError) {
      err(`docpipe: ${e.message}`);
      err(USAGE);
      return 2;
    }
    err(`docpipe: ${(e as Error).message}`);
    return 1;
  }
}
