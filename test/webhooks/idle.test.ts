// With nothing to deliver, the dispatcher waits its poll interval between looks. "No pending
// delivery" once read as "one due now" (SQL's greatest() skips a NULL), and an idle dispatcher
// queried Postgres without pause: hundreds of ticks a second, on every server.
import t from 'tap';
import { startWorld, storeModes } from '../helpers/world.js';
import { msUntilNextDue } from '../../src/webhooks/store.js';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import { createLogger } from '../../src/log.js';
import type { Sql } from '../../src/store/db.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

for (const mode of storeModes()) {
  t.test(`an idle dispatcher polls at its interval (${mode})`, async (t) => {
    const w = await startWorld(mode);
    t.teardown(() => w.close());
    t.equal(await msUntilNextDue(w.db.sql), null, 'no pending delivery: nothing is due');

    // The real client, with its queries counted.
    let queries = 0;
    const counted = new Proxy(w.db.sql, {
      apply(target, self, args) {
        queries++;
        return Reflect.apply(target as unknown as (...a: unknown[]) => unknown, self, args);
      },
    }) as Sql;
    const dispatcher = new WebhookDispatcher({
      sql: counted, log: createLogger('silent'), allowPrivateNetwork: false, timeScale: 1, timeoutMs: 1_000, pollMs: 250,
    });
    dispatcher.start();
    await sleep(1_000);
    await dispatcher.stop();
    // A look is two queries (claim, then the next due time); at a 250 ms interval one second
    // holds about five looks. Without the interval it was hundreds.
    t.ok(queries >= 2, `it looked (${queries} queries)`);
    t.ok(queries <= 14, `it waited between looks (${queries} queries in 1 s)`);
  });
}
