// The SSRF guard for every outbound request made on a client's behalf (URL conversions,
// webhook deliveries). Two layers, both needed:
// - assertPublicUrl: before a request (and before each redirect hop): http(s) only, no
//   credentials, and every address the host resolves to must be public.
// - guardedDispatcher: an undici dispatcher whose connector checks the address actually
//   connected to (IP literals directly, names through a checking DNS lookup), so DNS rebinding
//   between the check and the connect, or a redirect that skipped the check, cannot reach a
//   private address.
// Odd IPv4 spellings (2130706433, 0177.0.0.1, 0x7f.1, 127.1) need no code here: WHATWG URL
// parsing turns them into dotted quads. Refusals are ApiError('invalid_request') naming the
// address class; a host that does not resolve is UnresolvableHostError (also invalid_request).
import dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { buildConnector, type Dispatcher, Agent } from 'undici';
import { ApiError } from '../errors.js';
import { classifyAddress } from './ip-class.js';

export { classifyAddress } from './ip-class.js';

/** Returns why an address is refused (its class, e.g. "loopback"), or null to allow it. */
export type AddressCheck = (address: string) => string | null;
export type Resolve = (host: string) => Promise<string[]>;

export interface GuardOptions {
  /** ALLOW_PRIVATE_NETWORK=1: skip the address checks (scheme and credentials still apply). */
  allowPrivate: boolean;
  /** Replaces classifyAddress; tests use it to allow one loopback server and no other. */
  check?: AddressCheck;
  /** Replaces DNS resolution (dns.lookup, all addresses). */
  resolve?: Resolve;
}

export class BlockedAddressError extends ApiError {
  readonly addressClass: string;
  constructor(host: string, address: string, addressClass: string) {
    const via = host === address ? '' : ` (it resolves to ${address})`;
    super('invalid_request', `Refused to fetch ${host}${via}: ${addressClass} addresses are not reachable from this service.`);
    this.addressClass = addressClass;
  }
}

export class UnresolvableHostError extends ApiError {
  constructor(host: string, reason: string) {
    super('invalid_request', `The host ${host} could not be resolved (${reason}).`);
  }
}

const defaultResolve: Resolve = async (host) => {
  const found = await dns.promises.lookup(host, { all: true, verbatim: true });
  return found.map((a) => a.address);
};

function bare(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** Names that mean this machine whatever DNS says (RFC 6761). */
function isLocalName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.+$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

/** Scheme and credential checks; returns the parsed URL. Throws invalid_request. */
export function parsePublicUrl(url: string | URL): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ApiError('invalid_request', `Not a valid URL: ${String(url).slice(0, 200)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new ApiError('invalid_request', `Only http and https URLs can be fetched, not ${u.protocol.replace(/:$/, '')}.`);
  }
  if (u.username || u.password) {
    throw new ApiError('invalid_request', 'URLs with credentials (user:password@host) are not accepted.');
  }
  if (!u.hostname) throw new ApiError('invalid_request', 'The URL has no host.');
  return u;
}

export async function assertPublicUrl(url: string | URL, opts: GuardOptions): Promise<URL> {
  const u = parsePublicUrl(url);
  if (opts.allowPrivate) return u;
  const check = opts.check ?? classifyAddress;
  const host = bare(u.hostname);
  if (isLocalName(host)) throw new BlockedAddressError(host, host, 'loopback');
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = await (opts.resolve ?? defaultResolve)(host);
    } catch (err) {
      throw new UnresolvableHostError(host, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
    }
    if (addresses.length === 0) throw new UnresolvableHostError(host, 'no addresses');
  }
  for (const address of addresses) {
    const why = check(address);
    if (why) throw new BlockedAddressError(host, address, why);
  }
  return u;
}

/** A net.connect `lookup` that fails when any address the name resolves to is refused. */
export function guardedLookup(check: AddressCheck = classifyAddress, resolve: Resolve = defaultResolve): LookupFunction {
  return (hostname, options, callback) => {
    const reply = callback as unknown as (err: Error | null, address: string | dns.LookupAddress[], family?: number) => void;
    const checked = async (): Promise<string[]> => {
      if (isLocalName(hostname)) throw new BlockedAddressError(hostname, hostname, 'loopback');
      const addresses = await resolve(hostname);
      if (addresses.length === 0) throw new UnresolvableHostError(hostname, 'no addresses');
      for (const a of addresses) {
        const why = check(a);
        if (why) throw new BlockedAddressError(hostname, a, why);
      }
      return addresses;
    };
    checked().then(
      (list) => {
        if (options.all) reply(null, list.map((address) => ({ address, family: isIP(address) })));
        else reply(null, list[0]!, isIP(list[0]!));
      },
      (err: Error) => reply(err, '', 4),
    );
  };
}

export interface DispatcherOptions {
  check?: AddressCheck;
  /** Replaces DNS resolution at connect time (tests simulate DNS rebinding with it). */
  resolve?: Resolve;
  connectTimeoutMs?: number;
}

/** An undici Agent that refuses to connect to a refused address, however it was reached. */
export function guardedDispatcher(opts: DispatcherOptions = {}): Dispatcher {
  const check = opts.check ?? classifyAddress;
  const connector = buildConnector({ lookup: guardedLookup(check, opts.resolve), timeout: opts.connectTimeoutMs ?? 10_000 });
  return new Agent({
    connect(options, callback) {
      const host = bare(options.hostname);
      // net.connect skips `lookup` for IP literals, so those are checked here.
      const why = isIP(host) ? check(host) : isLocalName(host) ? 'loopback' : null;
      if (why) {
        callback(new BlockedAddressError(host, host, why), null);
        return;
      }
      connector(options, callback);
    },
  });
}

/** The guard's refusal inside an error undici wrapped, if that is what failed. */
export function blockedCause(err: unknown): BlockedAddressError | null {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof BlockedAddressError) return e;
  }
  return null;
}
