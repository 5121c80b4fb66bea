// Every gate audit pass of every process reads, per active account, its open reservations, and
// the grants of the last minute. Both reads go through indexes of what they look for (the
// unsettled conversions of migration 0011, the grants of 0014), not through the account's day of
// conversions or the whole ledger: an account with thousands of settled conversions is audited
// from the few in flight. The statements checked are the ones the audit sends (captured from its
// connection), planned by Postgres over tables with their statistics up to date.
import t from 'tap';
import postgres from 'postgres';
import { startWorld, PG_URL } from '../helpers/world.js';
import { GateAudit } from '../../src/billing/audit.js';
import { reserveWithRebuild } from '../../src/billing/gate.js';
import { newId } from '../../src/store/ids.js';
import type { Sql } from '../../src/store/db.js';

interface PlanNode { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] }

function scans(node: PlanNode, out: PlanNode[] = []): PlanNode[] {
  if (node['Relation Name']) out.push(node);
  for (const child of node.Plans ?? []) scans(child, out);
  return out;
}

const SETTLED = 3000;

t.test('the audit reads the open reservations and the recent grants through their indexes', async (t) => {
  const w = await startWorld('postgres', {}, { redis: false });
  t.teardown(() => w.close());
  const sql = w.db.sql;
  const { accountId } = await w.newKey({ credits: 100_000 });

  // The gate holds the account (the audit looks only at accounts it holds).
  const held = await reserveWithRebuild(w.app.deps.gate, { accountId, conversionId: newId('conv'), credits: 1, concurrencyLimit: 100 }, w.app.deps.ledger.readLedger);
  t.equal(held.kind, 'reserved');

  // An account with a history: settled conversions (reserve, release, charge each).
  await sql`
    insert into conversions (id, account_id, name, operation, status, credits_reserved, credits_charged, created_at, completed_at, settled_at)
    select 'conv_old' || g, ${accountId}, 'a.pdf', 'parse', 'completed', 5, 3, now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
    from generate_series(1, ${SETTLED}) g`;
  await sql`
    insert into ledger (account_id, conversion_id, kind, amount)
    select ${accountId}, 'conv_old' || g, k.kind, k.amount
    from generate_series(1, ${SETTLED}) g, (values ('reserve', -5), ('release', 5), ('charge', -3)) k(kind, amount)`;
  // Written after the gate read the ledger: a reservation the gate lost, which the audit is to
  // find and, after its grace, adopt.
  const open = newId('conv');
  await sql`insert into conversions (id, account_id, name, operation, status, credits_reserved, created_at)
            values (${open}, ${accountId}, 'b.pdf', 'parse', 'running', 7, now())`;
  await sql`insert into ledger (account_id, conversion_id, kind, amount) values (${accountId}, ${open}, 'reserve', -7)`;
  await sql`analyze conversions`;
  await sql`analyze ledger`;

  const [{ schema }] = await sql<Array<{ schema: string }>>`select current_schema() as schema`;
  const sent: Array<{ query: string; params: unknown[] }> = [];
  const watched = postgres(PG_URL, {
    max: 1, onnotice: () => {}, connection: { search_path: schema },
    debug: (_conn: number, query: string, params: unknown[]) => { sent.push({ query, params }); },
  });
  t.teardown(() => watched.end({ timeout: 5 }));
  await watched`select 1`; // its connection is up and has read the types (arrays) before the audit uses it
  sent.length = 0;
  const audit = new GateAudit(watched as unknown as Sql, w.app.deps.gate, 0);
  audit.watch(accountId);
  await audit.run();
  const second = await audit.account(accountId);
  t.equal(second.adopted, 1, 'the reservation in flight that the gate lost is found among thousands settled');

  const plan = async (s: { query: string; params: unknown[] }): Promise<PlanNode[]> => {
    const [row] = await sql.unsafe(`explain (format json) ${s.query}`, s.params as never[]);
    return scans((row!['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan);
  };
  const openRead = sent.find((s) => /join ledger r on r.conversion_id = c.id and r.kind = 'reserve'/.test(s.query));
  const grantRead = sent.find((s) => /from ledger where kind = 'grant'/.test(s.query));
  t.ok(openRead, 'the audit read the open reservations');
  t.ok(grantRead, 'and the recent grants');

  const conversions = (await plan(openRead!)).filter((n) => n['Relation Name'] === 'conversions');
  t.same(conversions.map((n) => n['Index Name']), ['conversions_unsettled'],
    `the account's conversions are read from the unsettled ones (${JSON.stringify(conversions)})`);
  const ledger = (await plan(grantRead!)).filter((n) => n['Relation Name'] === 'ledger');
  t.same(ledger.map((n) => n['Index Name']), ['ledger_grants'], `the grants are read from their index (${JSON.stringify(ledger)})`);
});
