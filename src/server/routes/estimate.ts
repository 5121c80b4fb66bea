// POST /v1/convert/{kind}/estimate: prices a request without doing it (spec "Estimate result").
// The body is exactly what the submit endpoint takes and goes through the same parsing and the
// same ConversionService.plan() (sniff, count, price), so what is estimated is what submit
// reserves. An estimate never checks plan limits, never fails on a short balance, never creates
// a conversion or reserves; the sources it staged are removed by the request's clean-ups.
// URL sources are priced without fetching: the fetch plus the minimum price of a document (2).
import { resolveSources } from '../../uploads/refs.js';
import { ENDPOINTS, KINDS } from '../../converters/registry.js';
import { requireScope, requireSubscription } from '../auth.js';
import { checkRate, principalOf, type Deps } from '../deps.js';
import { sendJson } from '../respond.js';
import type { Router } from '../router.js';
import { readConvertRequest } from './convert.js';

export interface EstimateJson {
  sources: Array<{ name: string; pages: number; credits: number }>;
  credits_total: number;
  balance: number;
}

export function registerEstimate(router: Router, deps: Deps): void {
  for (const kind of KINDS) {
    router.add('POST', `/v1/convert/${ENDPOINTS[kind]}/estimate`, async (ctx) => {
      const p = await principalOf(deps, ctx);
      requireScope(p, 'read');
      requireSubscription(p);
      await checkRate(deps, p);
      const req = await readConvertRequest(deps, ctx, kind);
      const refs = await resolveSources(deps.db.sql, deps.blobs, p, req);
      let planned;
      try {
        planned = await deps.conversions.plan({ ...req, sources: [...req.sources, ...refs.sources] });
      } finally {
        await refs.release();
      }
      const body: EstimateJson = {
        sources: planned.map((s) => ({ name: s.name, pages: s.count.pages, credits: s.credits })),
        credits_total: planned.reduce((a, s) => a + s.credits, 0),
        balance: await deps.ledger.balance(p.accountId),
      };
      sendJson(ctx, 200, body);
    });
  }
}
