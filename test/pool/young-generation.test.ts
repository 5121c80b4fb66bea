// Each thread's young generation under `npm start`'s --max-semi-space-size: the converter threads
// take WORKER_YOUNG_MB's (the flag used to override it), the acceptor threads the main thread's.
import t from 'tap';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { mainYoungGenerationMb, semiSpaceFlagMb } from '../../src/pool/young-generation.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

t.test('the semi-space flag is read as V8 reads it', async (t) => {
  const cases: Array<[string[], number | undefined]> = [
    [[], undefined],
    [['--import=tsx'], undefined],
    [['--max-semi-space-size=32', '--single-threaded-gc'], 32],
    [['--max_semi_space_size', '16'], 16],
    [['--max-semi-space-size=16', '--max-semi-space-size=64'], 64],
    [['--max-semi-space-size=0'], undefined],
    [['--max-semi-space-size=many'], undefined],
    [['--max-semi-space-sizes=8'], undefined],
  ];
  for (const [args, mb] of cases) t.equal(semiSpaceFlagMb(args), mb, args.join(' ') || '(none)');
  t.equal(mainYoungGenerationMb(['--max-semi-space-size=32']), 96, 'two semi-spaces and a new large-object space of 32 MB');
  t.equal(mainYoungGenerationMb(['--stack-size=900']), undefined);
});

t.test('under --max-semi-space-size, pool threads get the young generation they are made with', async (t) => {
  const run = promisify(execFile);
  const { stdout } = await run(process.execPath, ['--max-semi-space-size=8', '--import=tsx', path.join(here, 'fixtures', 'young-limits.ts'), '192', '48'],
    { cwd: root, timeout: 60_000 });
  const limits = JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, number>;
  // V8's heap limit is the old generation's (300 MB here) plus the young generation's. Under the
  // flag, before it was cleared, both pool threads had the flag's 24 MB: 324 and 324.
  t.ok(Math.abs(limits['pool 192']! - 300 - 192) <= 8, `a pool thread made with 192 MB: heap limit ${limits['pool 192']} MB`);
  t.ok(Math.abs(limits['pool 48']! - 300 - 48) <= 8, `a pool thread made with 48 MB: heap limit ${limits['pool 48']} MB`);
  t.equal(limits['main young'], 24, 'the main thread\'s young generation, read from the flag');
  t.ok(Math.abs(limits.thread! - 300 - 24) <= 8, `a thread with an acceptor's limits, made after: heap limit ${limits.thread} MB`);
});
