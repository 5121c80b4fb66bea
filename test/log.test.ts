import t from 'tap';
import { createLogger, prettyLine, wantPretty } from '../src/log.js';

function capture(): { out: { write(s: string): void }; lines: string[] } {
  const lines: string[] = [];
  return { lines, out: { write: (s: string) => { lines.push(...s.split('\n').filter(Boolean)); } } };
}

t.test('a terminal gets readable lines unless LOG_PRETTY=0; LOG_PRETTY=1 forces them', async (t) => {
  t.equal(wantPretty({}, true), true);
  t.equal(wantPretty({}, false), false);
  t.equal(wantPretty({}, undefined as unknown as boolean), false);
  t.equal(wantPretty({ LOG_PRETTY: '0' }, true), false);
  t.equal(wantPretty({ LOG_PRETTY: '1' }, false), true);
});

t.test('a pretty line is time, level, message and key=value pairs', async (t) => {
  const c = capture();
  const log = createLogger('info', { pretty: true, out: c.out, color: false });
  log.info({ port: 8080, embedded: true, where: 'two words' }, 'docpipe listening');
  t.equal(c.lines.length, 1);
  t.match(c.lines[0], /^\d\d:\d\d:\d\d INFO  docpipe listening port=8080 embedded=true where="two words"$/);
});

t.test('a request record reads as method, route, status and duration', async (t) => {
  const line = prettyLine(JSON.stringify({
    level: 30, time: '2024-05-01T10:11:12.000Z', msg: 'request', request_id: 'req_abc', account_id: 'acct_1',
    method: 'GET', route: '/v1/conversions/:id', status: 404, ms: 3.2,
  }));
  t.match(line, /^\d\d:\d\d:\d\d INFO  GET \/v1\/conversions\/:id 404 3\.2ms request_id=req_abc account_id=acct_1\n$/);
});

t.test('errors print their message and stack under the line', async (t) => {
  const c = capture();
  const log = createLogger('info', { pretty: true, out: c.out, color: false });
  log.error({ err: new Error('disk full'), request_id: 'req_1' }, 'request failed');
  t.match(c.lines[0], /ERROR request failed request_id=req_1 err="disk full"$/);
  t.match(c.lines[1], /^\s+at /, 'the stack follows');
});

t.test('LOG_LEVEL is honoured in both formats', async (t) => {
  for (const pretty of [true, false]) {
    const c = capture();
    const log = createLogger('warn', { pretty, out: c.out, color: false });
    log.info('hidden');
    log.warn('shown');
    t.equal(c.lines.length, 1, `pretty=${pretty}`);
    t.match(c.lines[0], 'shown');
  }
  const c = capture();
  createLogger('info', { pretty: false, out: c.out }).info({ request_id: 'r' }, 'json');
  t.match(JSON.parse(c.lines[0]!), { level: 30, msg: 'json', request_id: 'r' });
});

t.test('colours are only added when asked for', async (t) => {
  const rec = JSON.stringify({ level: 40, time: Date.now(), msg: 'careful' });
  t.match(prettyLine(rec, true), /\x1b\[33mWARN/);
  t.notMatch(prettyLine(rec, false), /\x1b/);
  t.equal(prettyLine('not json'), 'not json\n', 'anything unparsable passes through');
});
