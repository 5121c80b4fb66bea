// Public ids begin with their creation time so that Postgres appends new rows' keys at the right
// end of each B-tree: an id made in a later millisecond sorts after, in JavaScript and in
// Postgres under the database's collation, "C" and ICU's root collation alike.
import t from 'tap';
import postgres from 'postgres';
import { newId, timeDigits } from '../../src/store/ids.js';
import { PG_URL } from '../helpers/world.js';

const ID = /^conv_[0-9a-z]{9}[0-9A-Za-z]{13}$/;

/** `n` ids, each made in a later millisecond than the one before. */
async function idsOverTime(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const at = Date.now();
    while (Date.now() === at) await new Promise((r) => setImmediate(r));
    ids.push(newId('conv'));
  }
  return ids;
}

t.test('an id is its prefix, 9 base36 digits of its creation time and 13 random base62 characters', async (t) => {
  const before = Date.now();
  const id = newId('conv');
  const after = Date.now();
  t.match(id, ID);
  const ms = parseInt(id.slice(5, 14), 36);
  t.ok(ms >= before && ms <= after, `the time digits read ${ms}, made between ${before} and ${after}`);
  const same = Array.from({ length: 1000 }, () => newId('file'));
  t.equal(new Set(same).size, same.length, 'ids made in the same millisecond differ');
  t.equal(timeDigits(0), '000000000');
  t.equal(timeDigits(36 ** 9 - 1), 'zzzzzzzzz', 'nine digits hold every millisecond up to the year 5000 and more');
});

t.test('ids made later sort after, in JavaScript and in Postgres under several collations', async (t) => {
  const ids = await idsOverTime(40);
  // the random part differs from the order of creation: only the time digits order them
  t.same([...ids].sort(), ids, 'as JavaScript compares strings');
  const sql = postgres(PG_URL, { max: 1, onnotice: () => {} });
  t.teardown(() => sql.end());
  const shuffled = [...ids].reverse();
  const available = new Set((await sql`select collname from pg_collation where collname in ('C', 'und-x-icu')`).map((r) => r.collname as string));
  t.ok(available.has('C'));
  for (const collation of ['default', ...available]) {
    const order = collation === 'default' ? sql`order by id` : sql`order by id collate ${sql(collation)}`;
    const rows = await sql`select id from unnest(${shuffled}::text[]) as u(id) ${order}`;
    t.same(rows.map((r) => r.id as string), ids, `under the ${collation} collation`);
  }
});
