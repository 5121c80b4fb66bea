// `npm run test:stress` (not part of CI): runs the whole suite while one busy loop per core
// keeps the machine loaded, to show which tests depend on speed. The loops are stopped at the end;
// the suite's own exit code and totals line are passed through.
import { spawn } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const cores = os.availableParallelism();
const burners = [];
for (let i = 0; i < cores; i++) {
  burners.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
}
const stop = () => { for (const b of burners) b.kill('SIGKILL'); };
process.on('SIGINT', () => { stop(); process.exit(130); });
process.on('SIGTERM', () => { stop(); process.exit(143); });

console.log(`# test:stress: ${cores} busy loops running beside the suite`);
const suite = spawn(process.execPath, [path.join(root, 'scripts', 'test.mjs'), ...process.argv.slice(2)], {
  cwd: root, stdio: 'inherit',
});
suite.on('close', (code) => {
  stop();
  process.exit(code ?? 1);
});
