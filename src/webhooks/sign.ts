// Signing of webhook deliveries per the Standard Webhooks spec: a secret `whsec_<base64 key>`,
// and headers webhook-id, webhook-timestamp (Unix seconds) and
// webhook-signature = "v1," + base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}")).
// The key is the base64-decoded part after `whsec_`, not the secret string itself.
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: 24 random bytes, base64, behind the prefix. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

export function secretKey(secret: string): Buffer {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  return Buffer.from(b64, 'base64');
}

export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secretKey(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three headers of one try; `timestamp` is this try's time, the id stays the event's. */
export function signedHeaders(secret: string, id: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': sign(secret, id, timestamp, body),
  };
}
