// Starts one of scenario A's bare baseline servers as its own process and stops it.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../docpipe.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));

export interface BareServer {
  origin: string;
  pid: number;
  stop(): Promise<void>;
}


export async function startBare(kind: 'uws' | 'http', responseFile: string): Promise<BareServer> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import=tsx', path.join(HERE, `bare-${kind}.ts`)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PORT: String(port), RESPONSE_FILE: responseFile },
  });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => { err += c.toString(); });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`bare ${kind} server did not start: ${err}`)), 20_000);
    child.stdout!.on('data', (c: Buffer) => {
      if (c.toString().includes('ready')) { clearTimeout(timer); resolve(); }
    });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`bare ${kind} server exited ${code}: ${err}`)); });
  });
  return {
    origin: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
