// The signature scheme and the receiver's verification helper, and that the README gives
// receivers exactly the code of src/webhooks/verify.ts.
import t from 'tap';
import { readFileSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { createHmac } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { verifyWebhook } from '../../src/webhooks/verify.js';
import { newSecret, secretKey, sign, signedHeaders } from '../../src/webhooks/sign.js';

const root = path.resolve(import.meta.dirname, '../..');

/** The README's ```js block that defines verifyWebhook. */
function readmeSnippet(): string {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Webhooks'));
  const block = /```js\n([\s\S]*?)```/.exec(section);
  if (!block || !block[1]!.includes('function verifyWebhook')) throw new Error('no verifyWebhook snippet in the README Webhooks section');
  return block[1]!;
}

/** JavaScript as TypeScript would emit it, comments and all whitespace removed. */
function normalised(source: string): string {
  const js = ts.transpileModule(source, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, removeComments: true },
  }).outputText;
  return js.replace(/\s+/g, '').replace(/,\)/g, ')');
}

t.test('the README snippet is the code of src/webhooks/verify.ts, types aside', async (t) => {
  const mine = normalised(readFileSync(path.join(root, 'src/webhooks/verify.ts'), 'utf8'));
  const readme = normalised(readmeSnippet());
  const fn = mine.slice(mine.indexOf('exportfunctionverifyWebhook'));
  t.ok(fn.length > 500, 'the function was found in verify.ts');
  t.ok(readme.includes(fn), 'the README snippet holds the same function body');
  t.ok(readme.includes("import{createHmac,timingSafeEqual}from'node:crypto';"), 'and the same import');
});

const secret = newSecret();
const body = JSON.stringify({ id: 'evt_1', type: 'conversion.completed', created_at: '2025-01-01T00:00:00.000Z', data: { object: { id: 'conv_1' } } });

t.test('a secret is whsec_ and base64 of 24 bytes, and the key is its decoded part', async (t) => {
  t.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/);
  t.equal(secretKey(secret).length, 24);
});

t.test('the signature is v1, base64 HMAC-SHA256 of id.timestamp.body under the decoded key', async (t) => {
  const expected = createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(`evt_1.1700000000.${body}`).digest('base64');
  t.equal(sign(secret, 'evt_1', 1700000000, body), `v1,${expected}`);
  // A vector computed independently of this code base (Standard Webhooks' documented example).
  const std = sign('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330,
    '{"test": 2432232314}');
  t.equal(std, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
});

const vectors: Array<{ name: string; headers: (h: Record<string, string>) => Record<string, string | undefined>; body?: string; secret?: string; ok: boolean }> = [
  { name: 'a correctly signed delivery', headers: (h) => h, ok: true },
  { name: 'a tampered body', headers: (h) => h, body: body.replace('conv_1', 'conv_2'), ok: false },
  { name: 'another endpoint\'s secret', headers: (h) => h, secret: newSecret(), ok: false },
  { name: 'a changed webhook-id', headers: (h) => ({ ...h, 'webhook-id': 'evt_2' }), ok: false },
  { name: 'a timestamp 6 minutes old', headers: (h) => ({ ...h, 'webhook-timestamp': String(Number(h['webhook-timestamp']) - 360) }), ok: false },
  { name: 'a timestamp 6 minutes ahead', headers: (h) => ({ ...h, 'webhook-timestamp': String(Number(h['webhook-timestamp']) + 360) }), ok: false },
  { name: 'a missing signature header', headers: (h) => ({ ...h, 'webhook-signature': undefined }), ok: false },
  { name: 'a v2 signature with the v1 value', headers: (h) => ({ ...h, 'webhook-signature': h['webhook-signature']!.replace('v1,', 'v2,') }), ok: false },
  { name: 'several signatures, one of them valid (key rotation)', headers: (h) => ({ ...h, 'webhook-signature': `v1,AAAA ${h['webhook-signature']}` }), ok: true },
];

t.test('verification accepts a signed delivery and refuses every alteration', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-verify-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'snippet.mjs');
  writeFileSync(file, readmeSnippet());
  const snippet = (await import(pathToFileURL(file).href)) as { verifyWebhook: typeof verifyWebhook };
  const now = Date.now();
  const signed = signedHeaders(secret, 'evt_1', body, now);
  for (const v of vectors) {
    for (const [name, verify] of [['verify.ts', verifyWebhook], ['README snippet', snippet.verifyWebhook]] as const) {
      const run = () => verify(v.secret ?? secret, v.headers(signed), Buffer.from(v.body ?? body), 300, now);
      if (v.ok) t.same(run(), JSON.parse(body), `${name}: ${v.name} is accepted`);
      else t.throws(run, `${name}: ${v.name} is refused`);
    }
  }
  t.doesNotThrow(() => verifyWebhook(secret, signed, body, 300, now + 299_000), 'a string body within tolerance is accepted');
});
