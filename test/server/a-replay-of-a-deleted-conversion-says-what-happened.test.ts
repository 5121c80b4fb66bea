// A retry under an Idempotency-Key whose conversion has since been deleted: the 404 says that
// the conversion this key created was deleted and what to do (a new key converts again), not
// to check an id and its account.
import t from 'tap';
import { MODES, PROBLEM_FIELDS, startWorld } from '../helpers/world.js';

interface Problem { error: string; status: number; detail: string; hint: string }

t.test('a replay after the conversion was deleted explains itself', async (t) => {
  const w = await startWorld(MODES[0]!);
  t.teardown(() => w.close());
  const submit = (key: string) => w.req('POST', '/v1/convert/text', { json: { text: 'kept words' }, headers: { 'idempotency-key': key } });

  const first = await submit('order-7');
  t.equal(first.status, 200);
  const { id } = await first.json() as { id: string };
  t.equal((await w.req('DELETE', `/v1/conversions/${id}`)).status, 200);

  const replay = await submit('order-7');
  t.equal(replay.status, 404);
  const p = await replay.json() as Problem;
  t.strictSame(Object.keys(p).sort(), [...PROBLEM_FIELDS].sort(), 'a whole Problem');
  t.equal(p.error, 'not_found');
  t.match(p.detail, `The conversion this Idempotency-Key created (${id}) has been deleted`);
  t.match(p.hint, /deleted/, 'the hint says what happened');
  t.match(p.hint, /new Idempotency-Key/, 'and what to do');
  t.notMatch(p.hint, /account/, 'not to check the id and its account');

  const again = await submit('order-8');
  t.equal(again.status, 200, 'a new key converts again');
  t.notOk(again.headers.get('idempotent-replayed'));
});
