// Public ids begin with their creation time so that Postgres appends new rows' keys at the right
// end of each B-tree: an id made in a later millisecond sorts after, in JavaScript and in
// Postgres under the database's collation, "C" and ICU's root collation alike. The ids here are
// made at given times (newId's clock argument), not by waiting for the clock.
import t from 'tap';
import postgres from 'postgres';
import { newId, timeDigits } from '../../src/store/ids.js';
import { PG_URL } from '../helpers/world.js';

const ID = /^conv_[0-9a-z]{9}[0-9A-Za-z]{13}$/;

/** A moment in 2026, in milliseconds since the epoch. */
const T = Date.UTC(2026, 10, 28, 8, 0, 0);

t.test('an id is its prefix, 9 base36 digits of its creation time and 13 random base62 characters', async (t) => {
  const id = newId('conv', T);
  t.match(id, ID);
  t.equal(id.slice(5, 14), timeDigits(T));
  t.equal(parseInt(id.slice(5, 14), 36), T, 'the time digits read back as the time the id was made at');
  t.match(newId('conv'), ID, 'made at the current time by default');
  const same = Array.from({ length: 1000 }, () => newId('file', T));
  t.equal(new Set(same).size, same.length, 'ids made in the same millisecond differ');
  t.equal(timeDigits(0), '000000000');
  t.equal(timeDigits(36 ** 9 - 1), 'zzzzzzzzz', 'nine digits hold every millisecond up to the year 5000 and more');
});

t.test('ids made later sort after, in JavaScript and in Postgres under several collations', async (t) => {
  // one millisecond apart, across a carry of the last digits (… 9 → a, z → 10): only the time
  // digits order them, the random part differs from the order of creation
  const start = T - (T % 36 ** 2) - 20;
  const ids = Array.from({ length: 40 }, (_, i) => newId('conv', start + i));
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
