// POST /v1/convert/{kind}/estimate: prices a request without doing it (spec "Estimate result").
// The body is exactly what the submit endpoint takes and goes through the same parsing and the
// same ConversionService.plan() (sniff, count, price), so what is estimated is what submit
// reserves. An estimate never checks plan limits, never fails on a short balance, never creates
// a conversion or reserves; the sources it staged are removed by the request's clean-ups.
// URL sources are fetched (into files the clean-ups remove too) and priced exactly: the fetch
// plus what was fetched, as its kind. A URL that cannot be fetched answers the Problem its file
// would carry at submit: 422 invalid_document for a remote failure (an HTTP error, a timeout, too
// large, too many redirects), 400 invalid_request when the SSRF guard refuses the address, 415
// when what came back is no kind the service converts. An estimate cannot price a source it
// cannot read, and answering 200 with a price of 0 would hide why.
import { resolveSources } from '../../uploads/refs.js';
import { ENDPOINTS, KINDS } from '../../converters/registry.js';
import { requireScope, requireSubscription } from '../auth.js';
import { checkRate, principalOf, type Deps } from '../deps.js';
import { sendJson } from '../respond.js';
import type { Router } from '../router.js';
import { readConvertRequest, stagedBy } from './convert.js';

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
        planned = await deps.conversions.plan({ ...req, sources: [...req.sources, ...refs.sources] }, stagedBy(ctx));
      } finally {
        await refs.release();
      }
      // What cannot be fetched cannot be priced: the answer is the Problem its file would carry.
      const unfetched = planned.find((s) => s.failure);
      if (unfetched) throw unfetched.failure;
      const body: EstimateJson = {
        sources: planned.map((s) => ({ name: s.name, pages: s.count.pages, credits: s.credits })),
        credits_total: planned.reduce((a, s) => a + s.credits, 0),
        balance: await deps.ledger.balance(p.accountId),
      };
      sendJson(ctx, 200, body);
    });
  }
}
