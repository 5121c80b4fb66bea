// The `components` of the OpenAPI document (src/server/openapi.ts): schemas of every resource,
// the shared parameters and headers, and the security schemes. JSON Schema 2020-12, as OpenAPI
// 3.1 uses it. The error codes come from src/errors.ts, so the document cannot drift from them.
import { ERRORS, type ErrorCode } from '../errors.js';

export type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const str = (description?: string): Schema => (description ? { type: 'string', description } : { type: 'string' });
const int = (description?: string): Schema => (description ? { type: 'integer', description } : { type: 'integer' });
const nullable = (s: Schema): Schema => ({ anyOf: [s, { type: 'null' }] });
const dateTime: Schema = { type: 'string', format: 'date-time' };
const enumOf = (values: readonly string[], description?: string): Schema =>
  ({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];
export const codesWithStatus = (status: number): ErrorCode[] => ERROR_CODES.filter((c) => ERRORS[c].status === status);

export const FORMATS = ['markdown', 'text', 'html', 'pages'] as const;
export const EVENT_TYPES = ['conversion.completed', 'conversion.failed'] as const;
const CONVERSION_STATUS = ['queued', 'running', 'completed', 'completed_with_errors', 'failed'] as const;
const FILE_STATUS = ['queued', 'running', 'completed', 'failed'] as const;
const ASYNC_REASONS = ['respond_async', 'too_many_sources', 'pages_exceed_sync_limit', 'capacity', 'wait_timeout'] as const;

const errorTable = ERROR_CODES
  .map((c) => `| ${ERRORS[c].status} | \`${c}\` | ${ERRORS[c].title} | ${ERRORS[c].retryable ? 'yes' : 'no'} |`).join('\n');

const schemas: Record<string, Schema> = {
  ErrorCode: {
    ...enumOf(ERROR_CODES),
    description: `Every error code the API answers with.\n\n| status | code | title | retryable |\n|---|---|---|---|\n${errorTable}`,
  },
  Problem: {
    type: 'object',
    description: 'An error (RFC 9457 problem+json with docpipe\'s extra fields).',
    required: ['type', 'title', 'status', 'detail', 'instance', 'error', 'message', 'hint', 'request_id', 'retryable'],
    properties: {
      type: { type: 'string', format: 'uri', description: 'https://docpipe.dev/errors/<code>' },
      title: str(), status: int('The HTTP status.'), detail: str(), instance: str('The request path.'),
      error: ref('ErrorCode'), message: str('Same as detail.'), hint: str('What to do about it.'),
      request_id: str('Also sent as the x-request-id header.'), retryable: { type: 'boolean' },
    },
    additionalProperties: false,
  },
  FileOutputRef: { type: 'object', required: ['id', 'format'], properties: { id: str(), format: nullable(enumOf(FORMATS)) } },
  File: {
    type: 'object',
    required: ['id', 'object', 'name', 'mime', 'role'],
    properties: {
      id: str('file_…'), object: { const: 'file' }, name: str(), mime: str(), role: enumOf(['source', 'output']),
      status: nullable(enumOf(FILE_STATUS)),
      format: { ...enumOf(FORMATS), description: 'On outputs only.' },
      variant: {
        ...enumOf(['standard', 'ai_enhanced']),
        description: 'On outputs only: ai_enhanced when a vision model wrote descriptions in it (and was charged for), else standard.',
      },
      bytes: nullable(int()), pages: nullable(int()), credits: nullable(int()),
      content: nullable(str('Inline content of an output up to 1 MB; null in lists and for larger files.')),
      error: nullable(ref('Problem')),
      links: { type: 'object', properties: { content: str('Download path of the bytes.') } },
      outputs: { type: 'array', items: ref('FileOutputRef'), description: 'On sources: the outputs made from them.' },
      progress: {
        type: 'object', description: 'On sources still queued or running: pages converted so far.',
        properties: { pages_done: int(), pages_total: nullable(int()) },
      },
    },
  },
  Conversion: {
    type: 'object',
    required: ['id', 'object', 'name', 'operation', 'status', 'created_at', 'summary', 'usage'],
    properties: {
      id: str('conv_…'), object: { const: 'conversion' }, name: str(), operation: enumOf(['parse', 'render']),
      status: enumOf(CONVERSION_STATUS), created_at: dateTime, completed_at: nullable(dateTime),
      async_reason: nullable(enumOf(ASYNC_REASONS, 'Why the call did not finish inside the request.')),
      files: { type: 'array', items: ref('File') },
      files_next_cursor: nullable(str('Pass as files_cursor to GET /v1/conversions/{id} for the next files.')),
      links: { type: 'object', properties: { self: str() } },
      metadata: { description: 'The caller\'s own data, returned unchanged.' },
      summary: {
        type: 'object',
        description: 'Counts of the sources by status, read in the same snapshot as `status` and `files`: they always agree.',
        properties: { sources: int(), queued: int(), running: int(), completed: int(), failed: int() },
      },
      usage: {
        type: 'object',
        properties: {
          credits_reserved: int(), credits_charged: int(),
          credits_remaining: int('The account\'s balance when this was answered, in every representation (answers, lists, the events stream\'s done, webhook events).'),
        },
      },
    },
  },
  ConversionList: {
    type: 'object',
    required: ['object', 'data', 'next_cursor'],
    properties: { object: { const: 'list' }, data: { type: 'array', items: ref('Conversion') }, next_cursor: nullable(str()) },
  },
  Deleted: {
    type: 'object',
    required: ['id', 'object', 'deleted'],
    properties: { id: str(), object: str(), deleted: { const: true } },
  },
  EstimateResult: {
    type: 'object',
    required: ['sources', 'credits_total', 'balance'],
    properties: {
      sources: {
        type: 'array', description: 'One entry per source, in request order.',
        items: {
          type: 'object', required: ['name', 'pages', 'credits'],
          properties: {
            name: str(), pages: int(), credits: int(),
            error: {
              ...ref('Problem'),
              description: 'A source that cannot be priced beside others that can (a file of the wrong type, a URL that cannot be '
                + 'fetched): the Problem its failed file would carry at submit; its credits and pages are 0. When no source can '
                + 'be priced the answer is that Problem itself.',
            },
          },
        },
      },
      credits_total: int('Sum of the credits of all sources.'),
      balance: int('The account\'s current credit balance.'),
    },
  },
  Upload: {
    type: 'object',
    required: ['id', 'object', 'status', 'part_size', 'part_count', 'expires_at'],
    properties: {
      id: str('upl_…'), object: { const: 'upload' },
      status: enumOf(['pending', 'completing', 'completed'], 'completing while POST …/complete assembles it.'),
      name: str(), bytes: int(), part_size: int('Bytes per part (the last may be smaller).'), part_count: int(),
      etag: nullable(str('Of the assembled object, once completed (S3 multipart style).')),
      created_at: dateTime, expires_at: dateTime, completed_at: nullable(dateTime),
      parts: { type: 'array', items: ref('UploadPart'), description: 'Parts received so far.' },
    },
  },
  UploadCreate: {
    type: 'object', required: ['bytes', 'name'], additionalProperties: false,
    properties: { bytes: { type: 'integer', minimum: 1 }, name: { type: 'string', minLength: 1 } },
  },
  UploadPart: {
    type: 'object', required: ['number', 'etag'],
    properties: {
      number: { type: 'integer', minimum: 1, maximum: 10000 }, etag: str('Quoted hex MD5 of the part, as S3 does.'),
      bytes: int('Size of the part as received (in responses).'),
    },
  },
  UploadComplete: {
    type: 'object', required: ['parts'], additionalProperties: false,
    properties: { parts: { type: 'array', minItems: 1, items: ref('UploadPart') } },
  },
  WebhookEndpoint: {
    type: 'object',
    required: ['id', 'object', 'url', 'eventTypes', 'created_at'],
    properties: {
      id: str('wh_…'), object: { const: 'webhook_endpoint' }, url: { type: 'string', format: 'uri' },
      eventTypes: { type: 'array', items: enumOf(EVENT_TYPES) },
      status: enumOf(['enabled', 'disabled'], 'An endpoint that answered 410 Gone is disabled.'),
      disabled_reason: nullable(str()),
      created_at: dateTime,
      secret: str('whsec_…, the signing secret: in the creation response only.'),
    },
  },
  WebhookCreate: {
    type: 'object', required: ['url', 'eventTypes'], additionalProperties: false,
    properties: {
      url: { type: 'string', format: 'uri', description: 'http(s); private and loopback addresses are refused.' },
      eventTypes: { type: 'array', minItems: 1, items: enumOf(EVENT_TYPES) },
    },
  },
  WebhookEndpointList: {
    type: 'object', required: ['object', 'data'],
    properties: { object: { const: 'list' }, data: { type: 'array', items: ref('WebhookEndpoint') }, next_cursor: nullable(str()) },
  },
  WebhookAttempt: {
    type: 'object',
    description: 'One delivery attempt of an event to an endpoint.',
    required: ['id', 'object', 'event_id', 'event_type', 'attempt', 'status', 'created_at'],
    properties: {
      id: str('wha_…'), object: { const: 'webhook_attempt' },
      event_id: str('evt_…; also the webhook-id header, stable across retries.'), event_type: str(),
      attempt: int('1 for the first try.'), status: enumOf(['succeeded', 'failed']),
      response_status: nullable(int()), latency_ms: nullable(int()), error: nullable(str()),
      next_retry_at: nullable(dateTime), created_at: dateTime,
    },
  },
  WebhookAttemptList: {
    type: 'object', required: ['object', 'data', 'next_cursor'],
    properties: { object: { const: 'list' }, data: { type: 'array', items: ref('WebhookAttempt') }, next_cursor: nullable(str()) },
  },
  WebhookEvent: {
    type: 'object',
    description: 'The body of a webhook delivery; `completed_with_errors` sends conversion.completed.',
    required: ['id', 'type', 'created_at', 'data'],
    properties: {
      id: str('evt_…'), type: enumOf(EVENT_TYPES), created_at: dateTime,
      data: { type: 'object', required: ['object'], properties: { object: ref('Conversion') } },
    },
  },
  WebhookTestEvent: {
    type: 'object',
    description: 'The body POST /v1/webhooks/{id}/test sends, whatever the endpoint subscribes to.',
    required: ['id', 'type', 'created_at', 'data'],
    properties: {
      id: str('evt_…'), type: { const: 'webhook.test' }, created_at: dateTime,
      data: { type: 'object', required: ['object'], properties: { object: ref('WebhookEndpoint') } },
    },
  },
  Health: { type: 'object', required: ['status'], properties: { status: { const: 'ok' } } },
  Ready: {
    type: 'object', required: ['status'],
    properties: { status: { const: 'ready' }, postgres: { const: 'ok' }, redis: { const: 'ok' } },
  },
};

const header = (description: string, schema: Schema = { type: 'string' }): Schema => ({ description, schema });

export const headers: Record<string, Schema> = {
  RequestId: header('The request\'s id (the client\'s own x-request-id when valid); also in every Problem.'),
  IdempotentReplayed: header('true when the response replays the conversion an earlier request with this Idempotency-Key made.', { const: 'true' }),
  RetryAfter: header('Seconds to wait before retrying.', { type: 'integer', minimum: 0 }),
  Location: header('Path of the created resource: GET it for its state.'),
  ContentRange: header('bytes start-end/size of a partial answer.'),
};

export const parameters: Record<string, Schema> = {
  IdempotencyKey: {
    name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 255 },
    description: 'Makes a submit safe to retry for 24 h: the same key with the same request replays the original conversion (Idempotent-Replayed: true); with a different request it is 422 idempotency_key_reused.',
  },
  Prefer: {
    name: 'Prefer', in: 'header', required: false, schema: { type: 'string', examples: ['respond-async', 'wait=5'] },
    description: 'RFC 7240: `respond-async` answers 202 at once; `wait=N` sets the wait window (seconds, at most 60).',
  },
  Wait: {
    name: 'wait', in: 'query', required: false, schema: { type: 'integer', minimum: 0, maximum: 60, default: 10 },
    description: 'Seconds to wait for the result before answering 202 (default SYNC_WAIT_DEFAULT_S).',
  },
  RequestId: {
    name: 'x-request-id', in: 'header', required: false, schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
    description: 'Your own request id, echoed back and logged; one is made when absent.',
  },
  ConversionId: { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'conv_…' },
  FileId: { name: 'fileId', in: 'path', required: true, schema: { type: 'string' }, description: 'file_…' },
  UploadId: { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'upl_…' },
  PartNumber: { name: 'number', in: 'path', required: true, schema: { type: 'integer', minimum: 1, maximum: 10000 } },
  WebhookId: { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'wh_…' },
  Limit: { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
  Cursor: { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'next_cursor of the previous page.' },
  Range: {
    name: 'Range', in: 'header', required: false, schema: { type: 'string', examples: ['bytes=0-1023', 'bytes=-500'] },
    description: 'One byte range (RFC 9110): 206 with Content-Range; a range outside the file is 416.',
  },
  FilesCursor: { name: 'files_cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'files_next_cursor of the previous answer.' },
};

export const securitySchemes: Record<string, Schema> = {
  ApiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'An API key, dp_live_….' },
  Bearer: { type: 'http', scheme: 'bearer', description: 'The same API key as Authorization: Bearer <key>.' },
};

export function components(): Schema {
  return { schemas, headers, parameters, securitySchemes };
}
