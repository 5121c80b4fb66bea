// GET /v1/openapi.json: the OpenAPI 3.1 document of every endpoint, built once as a plain object
// from openapi-paths.ts (operations) and openapi-schemas.ts (schemas, parameters, headers,
// security). Error codes come from src/errors.ts. Tests check that every route the server
// registers is described here and nothing else is, and that live answers match the schemas.
import { KINDS } from '../converters/registry.js';
import { ERRORS } from '../errors.js';
import { components, codesWithStatus, ERROR_CODES, EVENT_TYPES, ref, type Schema } from './openapi-schemas.js';
import { convertBody, hdr, json, operations, param } from './openapi-paths.js';

const PROBLEM_STATUSES = [...new Set(ERROR_CODES.map((c) => ERRORS[c].status))].sort((a, b) => a - b);

/** One response per error status, its `error` narrowed to the codes with that status. */
function problemResponses(): Record<string, Schema> {
  const out: Record<string, Schema> = {};
  for (const status of PROBLEM_STATUSES) {
    const codes = codesWithStatus(status);
    out[`Problem${status}`] = {
      description: codes.map((c) => `\`${c}\``).join(', '),
      headers: { 'x-request-id': hdr('RequestId'), ...(status === 429 || status === 503 ? { 'Retry-After': hdr('RetryAfter') } : {}) },
      content: json({ allOf: [ref('Problem'), { properties: { status: { const: status }, error: { enum: codes } } }] }, 'application/problem+json'),
    };
  }
  out.ProblemAny = {
    description: 'Any other error (see ErrorCode).',
    headers: { 'x-request-id': hdr('RequestId') },
    content: json(ref('Problem'), 'application/problem+json'),
  };
  return out;
}

/** The calls docpipe makes to webhook endpoints (OpenAPI 3.1 `webhooks`). */
function webhookCallbacks(): Schema {
  const h = (name: string, description: string): Schema => ({ name, in: 'header', required: true, schema: { type: 'string' }, description });
  const parameters = [
    h('webhook-id', 'The event id (evt_…), the same on every retry: use it to drop duplicates.'),
    h('webhook-timestamp', 'Unix seconds when this attempt was signed; reject old ones.'),
    h('webhook-signature', 'v1,<base64 HMAC-SHA256(secret, "{webhook-id}.{webhook-timestamp}.{body}")> (Standard Webhooks).'),
  ];
  const hooks: Record<string, Schema> = {};
  for (const type of EVENT_TYPES) {
    hooks[type] = {
      post: {
        summary: `${type}: sent to endpoints subscribed to it`,
        description: 'Retried on non-2xx and timeouts (10 s) with backoff ≈ 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 3 h, 6 h; '
          + 'a Retry-After is honoured; 410 Gone disables the endpoint.',
        parameters,
        requestBody: { required: true, content: json(ref('WebhookEvent')) },
        responses: { '2XX': { description: 'Received.' }, 410: { description: 'Gone: the endpoint is disabled.' } },
      },
    };
  }
  hooks['webhook.test'] = {
    post: {
      summary: 'webhook.test: sent once by POST /v1/webhooks/{id}/test', parameters,
      requestBody: { required: true, content: json(ref('WebhookTestEvent')) },
      responses: { '2XX': { description: 'Received.' } },
    },
  };
  return hooks;
}

let built: Schema | undefined;

export function openApiDocument(): Schema {
  if (built) return built;
  const paths: Record<string, Record<string, Schema>> = {};
  for (const op of operations()) {
    (paths[op.path] ??= {})[op.method] = {
      operationId: op.id,
      tags: [op.tag],
      summary: op.summary,
      description: op.scope ? `Needs the \`${op.scope}\` scope and an active Lite, Pro or Max subscription.` : 'No authentication.',
      ...(op.scope ? {} : { security: [] }),
      parameters: [...(op.params ?? []).map(param), param('RequestId')],
      ...(op.body ? { requestBody: op.body } : {}),
      responses: op.responses,
    };
  }
  built = {
    openapi: '3.1.0',
    info: {
      title: 'docpipe API',
      version: '1.0.0',
      description: 'Converts documents to Markdown (and text, HTML, pages) and bills the work in credits. '
        + 'Errors are application/problem+json with a stable `error` code (ErrorCode lists them all).',
    },
    servers: [{ url: '/' }],
    security: [{ ApiKey: [] }, { Bearer: [] }],
    tags: ['Convert', 'Estimate', 'Conversions', 'Uploads', 'Webhooks', 'Operations'].map((name) => ({ name })),
    paths,
    webhooks: webhookCallbacks(),
    components: {
      ...components(),
      responses: problemResponses(),
      requestBodies: Object.fromEntries(KINDS.map((k) => [`Convert_${k.replace('-', '_')}`, convertBody(k)])),
    },
  };
  return built;
}
