// An acceptor thread tells its process's gate audit which accounts it reserves for (the audit
// watches an account for WATCH_MS after the last word of it). Each note wakes the main thread, so
// an account is noted once a WATCH_RENOTE_MS, not at every reservation: shown with the notes
// counted and a clock moved by hand.
import t from 'tap';
import { LinkedAudit, WATCH_RENOTE_MS, type AcceptorLink } from '../../src/server/acceptor-link.js';
import { WATCH_MS } from '../../src/billing/audit.js';

t.test('an account is noted once a renote period, every account on its own', async (t) => {
  const notes: unknown[] = [];
  const link = { note: (n: unknown) => { notes.push(n); } } as unknown as AcceptorLink;
  let now = 1_000_000;
  const audit = new LinkedAudit(link, () => now);
  audit.watch('acct_a');
  audit.watch('acct_a');
  audit.watch('acct_b');
  now += WATCH_RENOTE_MS - 1;
  audit.watch('acct_a');
  t.same(notes, [{ op: 'watch', accountId: 'acct_a' }, { op: 'watch', accountId: 'acct_b' }], 'each account noted once so far');
  now += 1;
  audit.watch('acct_a');
  t.same(notes.at(-1), { op: 'watch', accountId: 'acct_a' }, 'noted again once the period has passed');
  t.equal(notes.length, 3);
  t.ok(WATCH_RENOTE_MS * 10 <= WATCH_MS, 'the process still watches an account long after the last note');
});
