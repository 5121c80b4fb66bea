// A bare uWS app of a test, listening on a free loopback port until the test ends.
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { loadUws } from '../../src/server/uws.js';

/** Listens `app` on 127.0.0.1 (a free port), closed in `t`'s teardown; the port. */
export async function listenBare(t: { teardown(fn: () => void): void }, app: TemplatedApp): Promise<number> {
  const uws = loadUws();
  const listen = await new Promise<us_listen_socket>((resolve, reject) => {
    app.listen('127.0.0.1', 0, (s) => (s ? resolve(s) : reject(new Error('cannot listen'))));
  });
  t.teardown(() => uws.us_listen_socket_close(listen));
  return uws.us_socket_local_port(listen);
}
