// Runs after `npm install` / `npm ci` (package.json postinstall): mends a defect of the
// `postgres` driver 3.4.9 that a Postgres restart under load runs into (upstream issues
// porsager/postgres#1066, #1154, #1208; not fixed in a release yet).
//
// The driver batches small writes behind a setImmediate. When a connection closes, its teardown
// cancels that timer but leaves the variable set and the buffered bytes in place, and it sets
// the socket to null. Two things follow:
// - a query executed on the closed connection (the driver's own ROLLBACK of a transaction whose
//   connection died) schedules a write that finds no socket: an uncaught TypeError from a timer,
//   which ends the whole process;
// - a connection torn down with a write pending never schedules a write again: after it
//   reconnects, its start-up message waits behind the stale timer until connect_timeout, over
//   and over, so the pool stalls for minutes after the database is back.
// - a new connection first fetches the array types (fetch_types) in a promise nobody handles: if
//   the connection dies during that query (porsager/postgres#1192, #1205), the rejection is
//   unhandled, which ends the process too.
// The edits: teardown forgets the timer and the stale bytes; a write with no socket rejects what
// is pending on the connection (CONNECTION_CLOSED, as a closed connection does) instead of
// throwing; the array-types fetch's failure is dropped (the connection's own queries get the
// error through the usual path). test/hardening/postgres-down.test.ts fails without them.
//
// Idempotent (a marker says a file is done). A driver whose code no longer has these lines (an
// upgrade) is left alone with a notice: the test above says whether it still needs mending.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MARK = '/* docpipe: closed-socket write mended */';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'postgres');
// The driver ships one copy per module system; each gets the same edits.
const FILES = ['src/connection.js', 'cjs/src/connection.js', 'cf/src/connection.js'];

const EDITS = [
  {
    what: 'a write that finds the socket gone settles the pending queries instead of throwing',
    from: '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)',
    to: `  function nextWrite(fn) {\n    ${MARK}\n    if (!socket) {\n      chunk = nextWriteTimer = null\n`
      + '      error(Errors.connection(\'CONNECTION_CLOSED\', options))\n      return false\n    }\n'
      + '    const x = socket.write(chunk, fn)',
  },
  {
    what: 'terminate() forgets the pending write',
    from: '      error(Errors.connection(\'CONNECTION_DESTROYED\', options))\n\n    clearImmediate(nextWriteTimer)',
    to: '      error(Errors.connection(\'CONNECTION_DESTROYED\', options))\n\n    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null',
  },
  {
    what: 'closed() forgets the pending write',
    from: '    remaining = 0\n    incomings = null\n    clearImmediate(nextWriteTimer)\n    socket.removeListener',
    to: '    remaining = 0\n    incomings = null\n    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n    socket.removeListener',
  },
  {
    what: 'a failed array-types fetch is not an unhandled rejection',
    from: '        return fetchArrayTypes()\n',
    to: '        return fetchArrayTypes().catch(() => { /* the queries of this connection got the error */ })\n',
  },
];

function patch(file) {
  const text = readFileSync(file, 'utf8');
  if (text.includes(MARK)) return 'already mended';
  const missing = EDITS.filter((e) => !text.includes(e.from));
  if (missing.length) return `left alone: ${missing.map((e) => e.what).join('; ')} — code not found (another version?)`;
  writeFileSync(file, EDITS.reduce((t, e) => t.replace(e.from, e.to), text));
  return 'mended';
}

if (!existsSync(root)) {
  console.log('patch-postgres: node_modules/postgres is not installed; nothing to do');
} else {
  const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  for (const f of FILES) {
    const file = path.join(root, f);
    if (existsSync(file)) console.log(`patch-postgres: postgres ${version} ${f}: ${patch(file)}`);
  }
}
