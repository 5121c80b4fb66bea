// How a receiver checks a docpipe webhook: the function below is the one the README's "Webhooks"
// section gives to copy (test/webhooks/verify.test.ts keeps the two identical, types aside).
// It depends on node:crypto only, so that it can be pasted into any Node receiver.
import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Verifies one delivery and returns its parsed event, or throws. `secret` is the endpoint's
 * whsec_… secret, `headers` the request's headers (lower-case names, as node:http gives them),
 * `body` the raw body exactly as received (before any JSON parsing).
 */
export function verifyWebhook(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: string | Buffer,
  toleranceSeconds = 300,
  now = Date.now(),
): unknown {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') {
    throw new Error('missing webhook-id, webhook-timestamp or webhook-signature header');
  }
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(now / 1000 - Number(timestamp)) > toleranceSeconds) {
    throw new Error('webhook-timestamp is too old or too far in the future');
  }
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  for (const entry of signatures.split(' ')) {
    const [version, signature] = entry.split(',');
    if (version !== 'v1' || !signature) continue;
    const given = Buffer.from(signature, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) {
      return JSON.parse(body.toString());
    }
  }
  throw new Error('no valid webhook signature');
}
