// The SSRF guard: address classes, URL checks before a request, and the dispatcher that checks
// again at connect time (IP literals, names, DNS rebinding). Servers here listen on 127.0.0.1.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { request } from 'undici';
import { ApiError } from '../../src/errors.js';
import {
  assertPublicUrl, BlockedAddressError, blockedCause, classifyAddress, guardedDispatcher, UnresolvableHostError,
} from '../../src/net/ssrf.js';

const deny = { allowPrivate: false };
const refusal = async (p: Promise<unknown>): Promise<ApiError> => {
  const err = await p.then(() => null, (e: unknown) => e);
  if (!(err instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(err)}`);
  return err;
};

t.test('addresses are classified by range, public ones pass', async (t) => {
  const table: Array<[string, string | null]> = [
    ['127.0.0.1', 'loopback'], ['127.255.0.9', 'loopback'], ['10.0.0.1', 'private'], ['172.16.5.4', 'private'],
    ['172.31.255.255', 'private'], ['192.168.1.1', 'private'], ['100.64.0.1', 'carrier-grade NAT'],
    ['169.254.169.254', 'cloud metadata'], ['169.254.1.1', 'link-local'], ['0.0.0.0', 'unspecified'],
    ['224.0.0.251', 'multicast'], ['255.255.255.255', 'reserved'], ['198.18.0.1', 'reserved'],
    ['::1', 'loopback'], ['::', 'unspecified'], ['fc00::1', 'unique local'], ['fd12:3456::1', 'unique local'],
    ['fe80::1', 'link-local'], ['ff02::1', 'multicast'], ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'], ['::ffff:169.254.169.254', 'cloud metadata'], ['::127.0.0.1', 'loopback'],
    ['64:ff9b::a00:1', 'private'], ['2002:7f00:1::1', 'loopback'], ['2001:db8::1', 'documentation'],
    ['8.8.8.8', null], ['172.32.0.1', null], ['93.184.216.34', null], ['2606:4700:4700::1111', null], ['::ffff:8.8.8.8', null],
    ['not-an-ip', 'not an IP address'],
  ];
  for (const [ip, cls] of table) {
    const got = classifyAddress(ip);
    if (cls === null) t.equal(got, null, `${ip} is public`);
    else t.match(got ?? '', cls, `${ip} is ${cls}`);
  }
});

t.test('URLs naming private addresses in any spelling are refused with the address class', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['http://127.0.0.1/', /loopback/], ['http://10.0.0.1/', /private/], ['http://169.254.169.254/latest/meta-data/', /metadata/],
    ['http://[::1]/', /loopback/], ['http://[::ffff:127.0.0.1]/', /loopback/], ['http://2130706433/', /loopback/],
    ['http://0x7f.0.0.1/', /loopback/], ['http://0177.0.0.1/', /loopback/], ['http://127.1/', /loopback/],
    ['http://0x7f.1:8080/', /loopback/], ['http://localhost/', /loopback/], ['http://localhost./', /loopback/],
    ['http://LOCALHOST:3000/', /loopback/], ['http://api.localhost/', /loopback/], ['https://[fd00::1]/', /unique local/],
    ['http://[fe80::1]/', /link-local/], ['http://100.64.1.1/', /carrier-grade/], ['http://0.0.0.0/', /unspecified/],
    ['http://0/', /unspecified/], ['http://224.0.0.1/', /multicast/],
  ];
  for (const [url, why] of cases) {
    const err = await refusal(assertPublicUrl(url, deny));
    t.ok(err instanceof BlockedAddressError, `${url} refused by the guard`);
    t.equal(err.code, 'invalid_request');
    t.match(err.message, why, `${url}: ${err.message}`);
  }
});

t.test('only http and https are accepted, without credentials', async (t) => {
  for (const url of ['file:///etc/passwd', 'ftp://example.com/x', 'gopher://example.com/', 'data:text/html,<p>x</p>', 'javascript:alert(1)']) {
    const err = await refusal(assertPublicUrl(url, { allowPrivate: true }));
    t.equal(err.code, 'invalid_request');
    t.match(err.message, /Only http and https/, url);
  }
  const cred = await refusal(assertPublicUrl('http://user:pw@example.com/', deny));
  t.match(cred.message, /credentials/);
  t.equal((await refusal(assertPublicUrl('not a url', deny))).code, 'invalid_request');
});

t.test('a hostname resolving to a private address is refused, even when one of its addresses is public', async (t) => {
  const resolve = async (host: string) => (host === 'mixed.test' ? ['93.184.216.34', '10.1.2.3'] : ['127.0.0.1']);
  const one = await refusal(assertPublicUrl('http://intranet.test/', { ...deny, resolve }));
  t.match(one.message, /intranet\.test \(it resolves to 127\.0\.0\.1\): loopback/);
  const mixed = await refusal(assertPublicUrl('http://mixed.test/', { ...deny, resolve }));
  t.match(mixed.message, /10\.1\.2\.3.*private/);
});

/** A name besides localhost that /etc/hosts maps to 127.x, to exercise real DNS resolution. */
function loopbackNameInHosts(): string | undefined {
  let hosts = '';
  try {
    hosts = readFileSync('/etc/hosts', 'utf8');
  } catch { /* no hosts file */ }
  return hosts.split('\n').map((l) => l.replace(/#.*/, '').trim().split(/\s+/))
    .filter((f) => f[0]?.startsWith('127.')).flatMap((f) => f.slice(1))
    .find((h) => h && !/^localhost\.?$/i.test(h) && !h.toLowerCase().endsWith('.localhost'));
}
const hostsName = loopbackNameInHosts();

t.test('a name that /etc/hosts maps to loopback is refused through real DNS resolution',
  { skip: hostsName ? false : 'no name besides localhost maps to 127.x in /etc/hosts' }, async (t) => {
    const err = await refusal(assertPublicUrl(`http://${hostsName}/`, deny));
    t.ok(err instanceof BlockedAddressError);
    t.match(err.message, /loopback/);
  });

t.test('public addresses pass, and allowPrivate lets private ones through', async (t) => {
  t.equal((await assertPublicUrl('https://8.8.8.8/dns', deny)).hostname, '8.8.8.8');
  t.equal((await assertPublicUrl('http://example.test/a', { ...deny, resolve: async () => ['93.184.216.34'] })).pathname, '/a');
  t.equal((await assertPublicUrl('http://127.0.0.1:8080/', { allowPrivate: true })).port, '8080');
});

t.test('a host that does not resolve is reported as unresolvable', async (t) => {
  const resolve = async (): Promise<string[]> => {
    throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
  };
  const err = await refusal(assertPublicUrl('http://nowhere.invalid/', { ...deny, resolve }));
  t.ok(err instanceof UnresolvableHostError);
  t.match(err.message, /nowhere\.invalid could not be resolved \(ENOTFOUND\)/);
});

t.test('the guarded dispatcher refuses at connect time', async (t) => {
  const server = http.createServer((_req, res) => res.end('secret'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;
  const dispatcher = guardedDispatcher();
  t.teardown(() => dispatcher.destroy());

  const viaIp = await request(`http://127.0.0.1:${port}/`, { dispatcher }).then(() => null, (e: unknown) => e);
  t.match(blockedCause(viaIp)?.message, /loopback/, 'an IP literal is refused');
  const viaName = await request(`http://localhost:${port}/`, { dispatcher }).then(() => null, (e: unknown) => e);
  t.match(blockedCause(viaName)?.message, /loopback/, 'localhost is refused');

  // DNS rebinding: the name looked public when checked, but resolves to loopback at connect.
  const rebinding = guardedDispatcher({ resolve: async () => ['127.0.0.1'] });
  t.teardown(() => rebinding.destroy());
  const rebound = await request(`http://rebind.test:${port}/`, { dispatcher: rebinding }).then(() => null, (e: unknown) => e);
  t.match(blockedCause(rebound)?.message, /rebind\.test \(it resolves to 127\.0\.0\.1\): loopback/);

  // The same server is reachable once the check allows its address: the refusals above were the guard's.
  const allowing = guardedDispatcher({ check: (a) => (a === '127.0.0.1' ? null : classifyAddress(a)), resolve: async () => ['127.0.0.1'] });
  t.teardown(() => allowing.destroy());
  const ok = await request(`http://allowed.test:${port}/`, { dispatcher: allowing });
  t.equal(await ok.body.text(), 'secret');
});
