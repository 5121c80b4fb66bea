// A TCP relay in front of a real dependency (Postgres, Redis) that a test can cut and restore,
// as if the dependency went away and came back: cut() destroys every live connection and stops
// listening, so new connections are refused (ECONNREFUSED, as a stopped server answers);
// restore() listens again on the same port. freeze() is the other failure: the connections stay
// open but nothing gets through (a partition, a stalled server) until thaw() lets what waited
// through in order. The machine's Postgres and Redis are shared with
// other tests and are never stopped themselves.
import net from 'node:net';

export interface Relay {
  port: number;
  /** True between cut() and restore(). */
  readonly down: boolean;
  /** Connections relayed so far (a test can check that its client went through the relay). */
  readonly connections: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function startRelay(targetPort: number, targetHost = '127.0.0.1'): Promise<Relay> {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  let down = false;
  let frozen = false;
  const waiting: Array<[net.Socket, Buffer]> = [];
  let server = listener();
  const forward = (from: net.Socket, to: net.Socket): void => {
    from.on('data', (d: Buffer) => {
      if (frozen) waiting.push([to, d]);
      else to.write(d);
    });
  };

  function listener(): net.Server {
    return net.createServer((client) => {
      connections++;
      const upstream = net.connect(targetPort, targetHost);
      sockets.add(client).add(upstream);
      forward(client, upstream);
      forward(upstream, client);
      const end = (): void => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    });
  }

  const listen = (s: net.Server, port: number): Promise<void> => new Promise((resolve, reject) => {
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => { s.off('error', reject); resolve(); });
  });
  const stop = (): Promise<void> => new Promise((resolve) => {
    for (const s of sockets) s.destroy();
    sockets.clear();
    if (!server.listening) { resolve(); return; }
    server.close(() => resolve());
  });

  await listen(server, 0);
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    get down() { return down; },
    get connections() { return connections; },
    async cut() {
      down = true;
      await stop();
    },
    async restore() {
      if (!down) return;
      server = listener();
      // The port was ours a moment ago; should another socket have taken it meanwhile, wait.
      for (let tries = 0; ; tries++) {
        try {
          await listen(server, port);
          break;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || tries > 50) throw err;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      down = false;
    },
    freeze() {
      frozen = true;
    },
    thaw() {
      frozen = false;
      for (const [to, d] of waiting.splice(0)) if (!to.destroyed) to.write(d);
    },
    close: stop,
  };
}
