// The operations of the OpenAPI document (src/server/openapi.ts): one entry per route the server
// registers, with its parameters, request body and responses. Problem responses are named by
// status (`#/components/responses/Problem404`); every operation also has a default Problem.
import { OCR_LANGUAGES } from '../converters/shared/ocr-languages.js';
import { ENDPOINTS, KINDS } from '../converters/registry.js';
import type { ConverterKind } from '../converters/types.js';
import { FORMATS, ref, type Schema } from './openapi-schemas.js';

export const param = (name: string): Schema => ({ $ref: `#/components/parameters/${name}` });
export const hdr = (name: string): Schema => ({ $ref: `#/components/headers/${name}` });
export const json = (schema: Schema, type = 'application/json'): Schema => ({ [type]: { schema } });

export interface Op {
  method: 'get' | 'post' | 'put' | 'delete';
  path: string;
  id: string;
  tag: string;
  summary: string;
  /** The key scope it needs; undefined = no authentication. */
  scope?: string;
  params?: string[];
  body?: Schema;
  responses: Record<string, Schema>;
}

/** An operation's responses: its successes, the Problem statuses it names, and the default. */
function answers(ok: Record<string, Schema>, problems: number[]): Record<string, Schema> {
  const out: Record<string, Schema> = { ...ok };
  for (const s of problems) out[String(s)] = { $ref: `#/components/responses/Problem${s}` };
  out.default = { $ref: '#/components/responses/ProblemAny' };
  return out;
}

const ok = (description: string, schema: Schema, extraHeaders: Record<string, Schema> = {}): Schema =>
  ({ description, headers: { 'x-request-id': hdr('RequestId'), ...extraHeaders }, content: json(schema) });

const DOWNLOAD_TYPES = ['text/markdown', 'text/plain', 'text/html', 'application/json', 'application/octet-stream'];
const bytes = (description: string, extra: Record<string, Schema> = {}): Schema => ({
  description, headers: { 'x-request-id': hdr('RequestId'), ...extra },
  content: Object.fromEntries(DOWNLOAD_TYPES.map((t) => [t, { schema: { type: 'string' } }])),
});
const rawBody = { required: true, content: { 'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } };
const jsonBody = (name: string): Schema => ({ required: true, content: json(ref(name)) });

const AUTH = [401, 403, 429];
const SUBMIT_ERRORS = [400, ...AUTH, 402, 404, 409, 410, 413, 415, 422, 503];
const ESTIMATE_ERRORS = [400, ...AUTH, 404, 409, 410, 413, 415, 422];

const mainContent = (byDefault: boolean): Schema => ({
  type: 'boolean', default: byDefault,
  description: `true: the page's main content only (Readability), under its title as the # heading; navigation, headers, footers, sidebars, banners and link lists left out. A page that is not an article (short, a form, a list of links), nested deeper than 100 elements or too large for the extraction is converted whole. false: the whole document. Default ${byDefault} for ${byDefault ? 'URL' : 'HTML'} conversions; the price is the same.`,
});

/** JSON fields of each convert endpoint beyond the common ones (src/server/convert-request.ts). */
function kindFields(kind: ConverterKind): Record<string, Schema> {
  const s = { type: 'string' };
  const list = { type: 'array', items: s, minItems: 1 };
  const uri = { type: 'string', format: 'uri' };
  const languages = {
    type: 'array', items: { enum: [...OCR_LANGUAGES] }, minItems: 1, maxItems: 5,
    description: 'Languages of the text OCR reads (scanned pages, figures, images), as tesseract codes; default ["eng"]. In multipart, a comma-separated list.',
  };
  switch (kind) {
    case 'pdf': return {
      pages: { type: 'string', description: 'Page ranges such as "1-3,5,8-". Pages past the end are ignored; a range selecting no page of the document is a 400 invalid_request naming its page count (nothing is charged).' },
      quality: { enum: ['fast', 'standard', 'max'] }, table_mode: {
        enum: ['fast', 'accurate'],
        description: 'fast (default): ruled tables and tables aligned by whitespace; accurate: also rows with one short piece inside a table (section labels, sparse columns). quality max implies accurate.',
      },
      figures: {
        enum: ['placeholder', 'describe'],
        description: 'describe: a description under each figure, by the vision model when one is configured, else the built-in one (which says so). No extra charge.',
      },
      ocr: { type: 'boolean' }, languages,
    };
    case 'image': return {
      image_mode: {
        enum: ['ocr', 'understand'],
        description: 'understand: a description before the text, by the configured vision model (5 credits an image, variant ai_enhanced); '
          + 'without one, or when it does not answer, by the built-in analysis, which says so, priced as ocr (2 credits, variant standard).',
      },
      languages,
    };
    case 'html': return { html: s, htmls: list, text: s, texts: list, base_url: uri, main_content: mainContent(false) };
    case 'url': return { url: uri, urls: { ...list, items: uri }, main_content: mainContent(true) };
    case 'text': return { text: s, texts: list };
    case 'markdown-html': case 'markdown-text': return { markdown: s, text: s, texts: list };
    default: return {};
  }
}

/** The request body of a convert endpoint and of its estimate twin: JSON or multipart. */
export function convertBody(kind: ConverterKind): Schema {
  const fields: Record<string, Schema> = {
    file: { type: 'string', description: 'A file_ id of an earlier conversion.' },
    files: { type: 'array', items: { type: 'string' } },
    upload: { type: 'string', description: 'An upl_ id of a completed chunked upload.' },
    uploads: { type: 'array', items: { type: 'string' } },
    formats: { type: 'array', items: { enum: [...FORMATS] }, minItems: 1, description: 'Outputs wanted; markdown when omitted.' },
    store: { type: 'boolean', description: 'Keep the result in the account library until deleted (else 24 h).' },
    metadata: { type: 'object', description: 'Returned unchanged.' },
    name: { type: 'string', minLength: 1, maxLength: 255, description: 'The conversion\'s name in listings; else its first source\'s file name ("report.pdf and 2 more").' },
    ...kindFields(kind),
  };
  const asText = Object.fromEntries(Object.entries(fields).filter(([k]) => k !== 'file' && k !== 'files').map(([k, v]) => [k, {
    type: 'string',
    description: `As the JSON field${v.description ? ` (${String(v.description)})` : ''}; lists comma-separated or as JSON, metadata as JSON.`,
  }]));
  const binary = { type: 'string', contentMediaType: 'application/octet-stream' };
  const file = { description: 'The document(s): one part each, up to 100.', anyOf: [binary, { type: 'array', items: binary }] };
  return {
    required: true,
    content: {
      'application/json': { schema: { type: 'object', properties: fields, additionalProperties: false } },
      'multipart/form-data': { schema: { type: 'object', required: ['file'], additionalProperties: false, properties: { file, ...asText } } },
    },
  };
}

function convertOps(): Op[] {
  return KINDS.flatMap((kind): Op[] => {
    const id = kind.replace('-', '_');
    const label = ENDPOINTS[kind].replace('/', ' to ');
    const body = { $ref: `#/components/requestBodies/Convert_${id}` };
    const conv = (d: string): Schema => ok(d, ref('Conversion'), { Location: hdr('Location'), 'Idempotent-Replayed': hdr('IdempotentReplayed') });
    return [{
      method: 'post', path: `/v1/convert/${ENDPOINTS[kind]}`, id: `convert_${id}`, tag: 'Convert', scope: 'convert',
      summary: `Convert ${label}`, params: ['IdempotencyKey', 'Prefer', 'Wait'], body,
      responses: answers({
        200: conv('Finished inside the wait window. A source of the wrong type beside sources of the right one is a failed file '
          + '(input_format_mismatch, no charge) and the others convert; 415 only when no source is of the endpoint\'s kind.'),
        202: conv('Still running; async_reason says why.'),
      }, SUBMIT_ERRORS),
    }, {
      method: 'post', path: `/v1/convert/${ENDPOINTS[kind]}/estimate`, id: `estimate_${id}`, tag: 'Estimate', scope: 'read',
      summary: `Price a ${label} conversion without doing it`, body,
      responses: answers({
        200: ok('The price; no conversion is created, nothing is reserved. A source that cannot be priced beside others carries '
          + 'its error; when none can be priced the answer is the first one\'s Problem.', ref('EstimateResult')),
      }, ESTIMATE_ERRORS),
    }];
  });
}

const SSE = 'text/event-stream: `progress` events ({id, status, files: [{id, name, status, pages_done, pages_total}]}, read in '
  + 'one snapshot) on every change, then `done` with the Conversion as GET shows it (without file contents; `usage.credits_remaining` '
  + 'is the balance), or `deleted`; then the stream ends.';

export function operations(): Op[] {
  return [
    { method: 'get', path: '/healthz', id: 'healthz', tag: 'Operations', summary: 'The process is up',
      responses: { 200: ok('Up.', ref('Health')) } },
    { method: 'get', path: '/readyz', id: 'readyz', tag: 'Operations', summary: 'Every acceptor thread listens, and Postgres (and Redis, when configured) answer',
      responses: { 200: ok('Ready.', ref('Ready')), 503: { $ref: '#/components/responses/Problem503' } } },
    { method: 'get', path: '/metrics', id: 'metrics', tag: 'Operations', summary: 'Prometheus metrics of this process',
      responses: { 200: { description: 'Prometheus text format 0.0.4.', content: { 'text/plain': { schema: { type: 'string' } } } } } },
    { method: 'get', path: '/v1/openapi.json', id: 'openapi', tag: 'Operations', summary: 'This document',
      responses: { 200: ok('OpenAPI 3.1.', { type: 'object' }) } },
    ...convertOps(),
    { method: 'get', path: '/v1/conversions', id: 'listConversions', tag: 'Conversions', scope: 'read',
      summary: 'List conversions, newest first', params: ['Limit', 'Cursor'],
      responses: answers({ 200: ok('A page.', ref('ConversionList')) }, [400, ...AUTH]) },
    { method: 'get', path: '/v1/conversions/{id}', id: 'getConversion', tag: 'Conversions', scope: 'read',
      summary: 'One conversion with its files and contents', params: ['ConversionId', 'FilesCursor'],
      responses: answers({ 200: ok('The conversion.', ref('Conversion')) }, [400, ...AUTH, 404]) },
    { method: 'delete', path: '/v1/conversions/{id}', id: 'deleteConversion', tag: 'Conversions', scope: 'convert',
      summary: 'Delete a conversion and its files; running work is cancelled', params: ['ConversionId'],
      responses: answers({ 200: ok('Deleted.', ref('Deleted')) }, [...AUTH, 404]) },
    { method: 'get', path: '/v1/conversions/{id}/files/{fileId}/content', id: 'getFileContent', tag: 'Conversions', scope: 'read',
      summary: 'Download a source or output', params: ['ConversionId', 'FileId', 'Range'],
      responses: answers({
        200: bytes('The bytes, in the file\'s media type.'),
        206: bytes('The requested range.', { 'Content-Range': hdr('ContentRange') }),
      }, [...AUTH, 404, 410, 416]) },
    { method: 'get', path: '/v1/conversions/{id}/events', id: 'conversionEvents', tag: 'Conversions', scope: 'read',
      summary: 'Server-sent events of a conversion\'s progress', params: ['ConversionId'],
      responses: answers({ 200: { description: SSE, content: { 'text/event-stream': { schema: { type: 'string' } } } } }, [...AUTH, 404]) },
    { method: 'post', path: '/v1/uploads', id: 'createUpload', tag: 'Uploads', scope: 'uploads',
      summary: 'Start a chunked upload (files over 100 MB)', body: jsonBody('UploadCreate'),
      responses: answers({ 201: ok('Created; send part_count parts of part_size bytes.', ref('Upload'), { Location: hdr('Location') }) }, [400, ...AUTH, 413]) },
    { method: 'get', path: '/v1/uploads/{id}', id: 'getUpload', tag: 'Uploads', scope: 'uploads',
      summary: 'One upload', params: ['UploadId'],
      responses: answers({ 200: ok('The upload.', ref('Upload')) }, [...AUTH, 404, 410]) },
    { method: 'put', path: '/v1/uploads/{id}/parts/{number}', id: 'putUploadPart', tag: 'Uploads', scope: 'uploads',
      summary: 'Send one part (raw bytes)', params: ['UploadId', 'PartNumber'], body: rawBody,
      responses: answers({ 200: ok('Stored; keep the etag for complete.', ref('UploadPart')) }, [400, ...AUTH, 404, 409, 410, 413, 503]) },
    { method: 'post', path: '/v1/uploads/{id}/complete', id: 'completeUpload', tag: 'Uploads', scope: 'uploads',
      summary: 'Assemble the parts in order and check them', params: ['UploadId'], body: jsonBody('UploadComplete'),
      responses: answers({ 200: ok('Completed; convert it with "upload": id.', ref('Upload')) }, [400, ...AUTH, 404, 409, 410, 413, 503]) },
    { method: 'post', path: '/v1/webhooks', id: 'createWebhook', tag: 'Webhooks', scope: 'webhooks',
      summary: 'Register a webhook endpoint (its secret is shown only here)', body: jsonBody('WebhookCreate'),
      responses: answers({ 201: ok('Created, with its secret.', { allOf: [ref('WebhookEndpoint'), { required: ['secret'] }] }) }, [400, ...AUTH]) },
    { method: 'get', path: '/v1/webhooks', id: 'listWebhooks', tag: 'Webhooks', scope: 'webhooks',
      summary: 'List webhook endpoints',
      responses: answers({ 200: ok('The endpoints (without secrets).', ref('WebhookEndpointList')) }, AUTH) },
    { method: 'delete', path: '/v1/webhooks/{id}', id: 'deleteWebhook', tag: 'Webhooks', scope: 'webhooks',
      summary: 'Delete a webhook endpoint', params: ['WebhookId'],
      responses: answers({ 200: ok('Deleted.', ref('Deleted')) }, [...AUTH, 404]) },
    { method: 'get', path: '/v1/webhooks/{id}/deliveries', id: 'listWebhookDeliveries', tag: 'Webhooks', scope: 'webhooks',
      summary: 'Delivery attempts to an endpoint, newest first', params: ['WebhookId', 'Limit', 'Cursor'],
      responses: answers({ 200: ok('Attempts, newest first.', ref('WebhookAttemptList')) }, [400, ...AUTH, 404]) },
    { method: 'post', path: '/v1/webhooks/{id}/test', id: 'testWebhook', tag: 'Webhooks', scope: 'webhooks',
      summary: 'Send a signed webhook.test event to the endpoint now', params: ['WebhookId'],
      responses: answers({ 200: ok('Sent once (no retries); the attempt as recorded.', ref('WebhookAttempt')) }, [...AUTH, 404]) },
  ];
}
