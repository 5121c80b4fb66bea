// One try of one webhook delivery: SSRF check of the URL (again: DNS may have changed since the
// endpoint was created), a signed POST through the guarded undici dispatcher, a hard timeout
// covering the whole exchange, and an outcome that never throws.
import { Agent, request, type Dispatcher } from 'undici';
import { assertPublicUrl, blockedCause, guardedDispatcher } from '../net/ssrf.js';
import { ApiError } from '../errors.js';
import { signedHeaders } from './sign.js';
import type { AttemptOutcome } from './store.js';

export const USER_AGENT = 'docpipe-webhooks/1 (+https://docpipe.dev/docs/webhooks)';
/** Bytes of a receiver's answer read (and thrown away) before the connection is reused. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface SendOutcome extends AttemptOutcome {
  /** Retry-After of a non-2xx answer, in seconds (delta-seconds or HTTP-date). */
  retryAfterS: number | null;
}

export interface Sender {
  send(url: string, secret: string, eventId: string, body: string, signal?: AbortSignal): Promise<SendOutcome>;
  close(): Promise<void>;
}

export function createSender(opts: { allowPrivateNetwork: boolean; timeoutMs: number }): Sender {
  const dispatcher: Dispatcher = opts.allowPrivateNetwork
    ? new Agent({ connect: { timeout: opts.timeoutMs } })
    : guardedDispatcher({ connectTimeoutMs: opts.timeoutMs });

  return {
    async send(url, secret, eventId, body, outer) {
      const started = performance.now();
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(), opts.timeoutMs);
      const signal = outer ? AbortSignal.any([outer, timeout.signal]) : timeout.signal;
      const fail = (error: string, responseStatus: number | null = null): SendOutcome => ({
        ok: false, responseStatus, latencyMs: performance.now() - started, error, retryAfterS: null,
      });
      try {
        const target = await assertPublicUrl(url, { allowPrivate: opts.allowPrivateNetwork });
        const res = await request(target, {
          dispatcher, signal, method: 'POST', maxRedirections: 0,
          headers: {
            'content-type': 'application/json',
            'user-agent': USER_AGENT,
            ...signedHeaders(secret, eventId, body),
          },
          body,
        });
        await drain(res.body);
        const latencyMs = performance.now() - started;
        const ok = res.statusCode >= 200 && res.statusCode < 300;
        return {
          ok, responseStatus: res.statusCode, latencyMs,
          error: ok ? null : `the receiver answered HTTP ${res.statusCode}`,
          retryAfterS: ok ? null : retryAfterOf(res.headers['retry-after']),
        };
      } catch (err) {
        if (timeout.signal.aborted) return fail(`timed out after ${opts.timeoutMs} ms`);
        if (outer?.aborted) return fail('the server shut down during the try');
        const blocked = blockedCause(err);
        if (blocked) return fail(blocked.message);
        if (err instanceof ApiError) return fail(err.message);
        const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
        return fail(`request failed: ${e.cause?.code ?? e.code ?? e.message}`);
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => dispatcher.close().catch(() => {}),
  };
}

async function drain(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<void> {
  let n = 0;
  for await (const chunk of body) {
    n += chunk.length;
    if (n > MAX_RESPONSE_BYTES) { body.destroy(); return; }
  }
}

export function retryAfterOf(v: string | string[] | undefined): number | null {
  const raw = (Array.isArray(v) ? v[0] : v)?.trim();
  if (!raw) return null;
  if (/^\d+$/.test(raw)) return Number(raw);
  const at = Date.parse(raw);
  return Number.isNaN(at) ? null : Math.max(0, (at - Date.now()) / 1000);
}
