// A docpipe server in a process of its own, for the tests that need one whole: its sources
// through tsx (SOURCE_ENTRY) or a compiled entry, on a port the kernel picks. It resolves once the
// server prints the port it listens on, and fails if it exits or stays silent before that.
import { spawn, type ChildProcess } from 'node:child_process';

/** The server from its TypeScript sources, as the tests run them. */
export const SOURCE_ENTRY = ['--import=tsx', 'src/main.ts'];

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  /** What it printed up to the line with its port (a first start's key is among it). */
  printed: string;
  /** Its exit code once it has exited. */
  exited: Promise<number | null>;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Starts `node <args>` with `env` over this process's environment (port 0, 127.0.0.1, plain logs). */
export function startServerProcess(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<ServerProcess> {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_PRETTY: '0', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  let printed = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start: ${printed}`)), timeoutMs);
    const early = (code: number | null): void => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}) before it listened: ${printed}`));
    };
    child.once('exit', early);
    let listening = false;
    child.stdout!.on('data', (d: Buffer) => {
      if (listening) return;
      printed += d.toString();
      const m = /"port":(\d+)/.exec(printed);
      if (!m) return;
      listening = true;
      clearTimeout(timer);
      child.off('exit', early);
      resolve({ child, port: Number(m[1]), printed, exited, stop: () => { child.kill('SIGTERM'); return exited; } });
    });
  });
}
