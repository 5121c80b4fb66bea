// Which addresses the SSRF guard (ssrf.ts) refuses, by class. Pure: no I/O.
// IPv6 forms that carry an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d,
// NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by the IPv4 address inside them, so
// [::ffff:127.0.0.1] is loopback like 127.0.0.1.
import { BlockList, isIP } from 'node:net';

type Range = [cls: string, net: string, prefix: number];

const V4: Range[] = [
  ['unspecified (0.0.0.0/8)', '0.0.0.0', 8],
  ['private (RFC 1918)', '10.0.0.0', 8],
  ['carrier-grade NAT (100.64.0.0/10)', '100.64.0.0', 10],
  ['loopback', '127.0.0.0', 8],
  ['link-local', '169.254.0.0', 16],
  ['private (RFC 1918)', '172.16.0.0', 12],
  ['reserved (IETF protocol assignments)', '192.0.0.0', 24],
  ['reserved (documentation)', '192.0.2.0', 24],
  ['reserved (6to4 relay)', '192.88.99.0', 24],
  ['private (RFC 1918)', '192.168.0.0', 16],
  ['reserved (benchmarking)', '198.18.0.0', 15],
  ['reserved (documentation)', '198.51.100.0', 24],
  ['reserved (documentation)', '203.0.113.0', 24],
  ['multicast', '224.0.0.0', 4],
  ['reserved (240.0.0.0/4, broadcast)', '240.0.0.0', 4],
];

const V6: Range[] = [
  ['reserved (IPv4-compatible)', '::', 96],
  ['reserved (discard-only)', '100::', 64],
  ['reserved (NAT64 local use)', '64:ff9b:1::', 48],
  ['reserved (IETF protocol assignments, Teredo)', '2001::', 23],
  ['reserved (documentation)', '2001:db8::', 32],
  ['reserved (documentation)', '3fff::', 20],
  ['unique local (fc00::/7)', 'fc00::', 7],
  ['link-local', 'fe80::', 10],
  ['site-local (deprecated)', 'fec0::', 10],
  ['multicast', 'ff00::', 8],
];

function lists(ranges: Range[], family: 'ipv4' | 'ipv6'): Array<[string, BlockList]> {
  return ranges.map(([cls, net, prefix]) => {
    const list = new BlockList();
    list.addSubnet(net, prefix, family);
    return [cls, list];
  });
}

const V4_LISTS = lists(V4, 'ipv4');
const V6_LISTS = lists(V6, 'ipv6');

/** The eight 16-bit groups of an IPv6 address (valid per isIP), dotted-quad tail included. */
export function ipv6Groups(ip: string): number[] {
  let text = ip.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const parse = (s: string): number[] => (s ? s.split(':').filter((x) => x !== '').map((x) => Number.parseInt(x, 16)) : []);
  const left = parse(head);
  const right = parse(rest ?? '');
  const fill = rest === undefined ? [] : new Array<number>(8 - left.length - right.length).fill(0);
  return [...left, ...fill, ...right];
}

function v4From(hi: number, lo: number): string {
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}

/** The IPv4 address an IPv6 address carries, by the transition forms listed above. */
export function embeddedIpv4(ip: string): string | null {
  const g = ipv6Groups(ip);
  const zero = (from: number, to: number): boolean => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && g[5] === 0xffff) return v4From(g[6]!, g[7]!);
  if (zero(0, 6) && (g[6] !== 0 || g[7]! > 1)) return v4From(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return v4From(g[6]!, g[7]!);
  if (g[0] === 0x2002) return v4From(g[1]!, g[2]!);
  return null;
}

function classifyV4(ip: string): string | null {
  if (ip === '169.254.169.254') return 'link-local (cloud metadata service)';
  for (const [cls, list] of V4_LISTS) if (list.check(ip, 'ipv4')) return cls;
  return null;
}

/**
 * Why an address must not be fetched ("loopback", "private (RFC 1918)", ...), or null when it
 * is a public unicast address. Anything that is not an IP address at all is refused.
 */
export function classifyAddress(address: string): string | null {
  const ip = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(ip);
  if (family === 4) return classifyV4(ip);
  if (family !== 6) return 'not an IP address';
  const g = ipv6Groups(ip);
  if (g.every((x) => x === 0)) return 'unspecified (::)';
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return 'loopback';
  const inner = embeddedIpv4(ip);
  if (inner) {
    const cls = classifyV4(inner);
    if (cls) return cls;
    if (g[0] === 0 && g[5] !== 0xffff) return 'reserved (IPv4-compatible)';
    return null;
  }
  for (const [cls, list] of V6_LISTS) if (list.check(ip, 'ipv6')) return cls;
  return null;
}
