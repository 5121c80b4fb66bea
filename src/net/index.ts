// Outbound network safety, what this folder offers:
// - ssrf.ts      the SSRF guard of every request made on a client's behalf (URL conversions,
//                webhook deliveries): public addresses only, checked at connect time
// - ip-class.ts  which address classes the guard refuses (pure)
// May import: the bottom only (types, config, errors, log) (scripts/layers.mjs).
export { assertPublicUrl, guardedDispatcher, parsePublicUrl, BlockedAddressError, UnresolvableHostError } from './ssrf.js';
export { classifyAddress } from './ip-class.js';
