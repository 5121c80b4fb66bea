// Operations endpoints without authentication: GET /metrics (Prometheus) and GET /v1/openapi.json.
// (/healthz and /readyz are registered in app.ts, next to the dependencies they probe.)
// /metrics carries no account data, only route templates and counts; keep it off the public
// edge all the same (deploy/nginx.conf refuses it).
import type { MetricsText } from '../acceptor-link.js';
import { openApiDocument } from '../openapi.js';
import { reply } from '../respond.js';
import type { Router } from '../router.js';

/** `metricsText`: the whole process's metrics, whichever acceptor thread is asked. */
export function registerOps(router: Router, metricsText: () => Promise<MetricsText>): void {
  router.add('GET', '/metrics', async (ctx) => {
    const { body, contentType } = await metricsText();
    reply(ctx, 200, body, contentType, { 'cache-control': 'no-store' });
  });

  let doc: string | undefined;
  router.add('GET', '/v1/openapi.json', (ctx) => {
    doc ??= JSON.stringify(openApiDocument());
    reply(ctx, 200, doc, 'application/json', { 'cache-control': 'public, max-age=300' });
  });
}
