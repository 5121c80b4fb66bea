// POST /v1/convert/{kind}/estimate: prices a request without doing it (spec "Estimate result").
// The body is exactly what the submit endpoint takes and goes through the same parsing and the
// same ConversionService.plan() (sniff, count, price), so what is estimated is what submit
// reserves. An estimate never checks plan limits, never fails on a short balance, never creates
// a conversion or reserves; the sources it staged are removed by the request's clean-ups.
// URL sources are fetched (into files the clean-ups remove too) and priced exactly: the fetch
// plus what was fetched, as its kind. A source that cannot be priced (a URL that cannot be
// fetched, a file of the wrong type) is a failed file at submit, and the estimate says so: it
// is listed with 0 credits and, as `error`, the Problem that file would carry (422
// invalid_document for a remote failure, 400 invalid_request for an address the SSRF guard
// refuses, 415 input_format_mismatch for the wrong type); the other sources are priced. When no
// source can be priced (a single one, say) the answer is the first one's Problem itself.
import { fileProblem, type Problem } from '../../errors.js';
import { resolveSources } from '../../uploads/refs.js';
import { ENDPOINTS, KINDS } from '../../converters/registry.js';
import { requireScope, requireSubscription } from '../auth.js';
import { checkRate, principalOf, type Deps } from '../deps.js';
import { sendJson } from '../respond.js';
import type { Router } from '../router.js';
import { readConvertRequest, stagedBy } from './convert.js';

export interface EstimateJson {
  sources: Array<{ name: string; pages: number; credits: number; error?: Problem }>;
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
      // What cannot be priced alone is the answer: the Problem its file would carry.
      if (planned.every((s) => s.failure)) throw planned[0]!.failure;
      const body: EstimateJson = {
        sources: planned.map((s) => ({
          name: s.name, pages: s.count.pages, credits: s.credits,
          ...(s.failure ? { error: fileProblem(s.failure, ctx.path, ctx.requestId) } : {}),
        })),
        credits_total: planned.reduce((a, s) => a + s.credits, 0),
        balance: await deps.ledger.balance(p.accountId),
      };
      sendJson(ctx, 200, body);
    });
  }
}
