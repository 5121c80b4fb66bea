// Every API error the service can answer with, in one table (DESIGN.md §8).
// Code never builds a Problem by hand: it throws `new ApiError(code, detail)` and the server
// turns that into application/problem+json with every Problem field filled in.

export interface ErrorSpec {
  status: number;
  title: string;
  retryable: boolean;
  hint: string;
}

export const ERRORS = {
  invalid_request: {
    status: 400, title: 'Invalid request', retryable: false,
    hint: 'Fix the request as the detail says; see /v1/openapi.json for every field.',
  },
  unauthorized: {
    status: 401, title: 'Unauthorized', retryable: false,
    hint: 'Send a valid API key in the x-api-key header or as Authorization: Bearer <key>.',
  },
  insufficient_credits: {
    status: 402, title: 'Insufficient credits', retryable: false,
    hint: 'Top up the account or price the work first with the matching /estimate endpoint.',
  },
  upload_limit_exceeded: {
    status: 403, title: 'Upload limit exceeded', retryable: false,
    hint: 'The plan\'s monthly file allowance is used up; upgrade the plan or wait for the next month.',
  },
  storage_limit_exceeded: {
    status: 403, title: 'Storage limit exceeded', retryable: false,
    hint: 'Delete stored conversions or upgrade the plan, or submit without store: true.',
  },
  scope_missing: {
    status: 403, title: 'Scope missing', retryable: false,
    hint: 'Use a key that has the scope named in the detail.',
  },
  subscription_required: {
    status: 403, title: 'Subscription required', retryable: false,
    hint: 'API access needs an active Lite, Pro or Max subscription.',
  },
  not_found: {
    status: 404, title: 'Not found', retryable: false,
    hint: 'Check the id and that it belongs to the account of the key you use.',
  },
  method_not_allowed: {
    status: 405, title: 'Method not allowed', retryable: false,
    hint: 'The Allow header lists the methods this path takes.',
  },
  upload_not_completed: {
    status: 409, title: 'Upload not completed', retryable: false,
    hint: 'Send every part, then POST /v1/uploads/{id}/complete before converting it.',
  },
  file_expired: {
    status: 410, title: 'File expired', retryable: false,
    hint: 'Files are kept 24 h unless stored with store: true; send the document again.',
  },
  payload_too_large: {
    status: 413, title: 'Payload too large', retryable: false,
    hint: 'Bodies over 100 MB must use a chunked upload: POST /v1/uploads.',
  },
  upload_too_large: {
    status: 413, title: 'Upload too large', retryable: false,
    hint: 'The upload is larger than declared or than the plan\'s per-file size limit.',
  },
  file_too_large: {
    status: 413, title: 'File too large', retryable: false,
    hint: 'The file is over the plan\'s per-file size limit; upgrade the plan or split the file.',
  },
  input_format_mismatch: {
    status: 415, title: 'Input format mismatch', retryable: false,
    hint: 'Send the document to the endpoint of its kind (a PDF to /v1/convert/pdf, and so on).',
  },
  range_not_satisfiable: {
    status: 416, title: 'Range not satisfiable', retryable: false,
    hint: 'Ask for a byte range that starts inside the file; Content-Range: bytes */<size> gives its size.',
  },
  page_cap_exceeded: {
    status: 422, title: 'Page cap exceeded', retryable: false,
    hint: 'Convert fewer pages with the pages option, or upgrade the plan.',
  },
  idempotency_key_reused: {
    status: 422, title: 'Idempotency key reused', retryable: false,
    hint: 'An Idempotency-Key names one request; use a new key for a different request.',
  },
  invalid_document: {
    status: 422, title: 'Invalid document', retryable: false,
    hint: 'The document is damaged, encrypted or not what it claims to be; check it opens locally.',
  },
  concurrency_limited: {
    status: 429, title: 'Concurrency limited', retryable: true,
    hint: 'Too many conversions are running for this account; retry after Retry-After seconds.',
  },
  rate_limited: {
    status: 429, title: 'Rate limited', retryable: true,
    hint: 'Too many requests this minute; retry after Retry-After seconds.',
  },
  internal_error: {
    status: 500, title: 'Internal error', retryable: true,
    hint: 'Retry; if it persists, report the request_id.',
  },
  parser_unavailable: {
    status: 503, title: 'Parser unavailable', retryable: true,
    hint: 'The converter for this kind is temporarily unavailable; retry shortly.',
  },
  conversion_unavailable: {
    status: 503, title: 'Conversion unavailable', retryable: true,
    hint: 'Storage is temporarily unavailable; retry shortly.',
  },
  service_unavailable: {
    status: 503, title: 'Service unavailable', retryable: true,
    hint: 'A dependency is down; retry with backoff.',
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Extra response headers, such as Retry-After or Allow. */
  readonly headers: Record<string, string>;
  /** What to do about it, where the code's own hint does not fit what happened. */
  readonly hint?: string;

  constructor(code: ErrorCode, detail?: string, headers: Record<string, string> = {}, hint?: string) {
    super(detail ?? ERRORS[code].title);
    this.name = 'ApiError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.headers = headers;
    if (hint !== undefined) this.hint = hint;
  }
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  error: ErrorCode;
  message: string;
  hint: string;
  request_id: string;
  retryable: boolean;
}

export function problemOf(code: ErrorCode, detail: string, instance: string, requestId: string, hint?: string): Problem {
  const spec: ErrorSpec = ERRORS[code];
  return {
    type: `https://docpipe.dev/errors/${code}`,
    title: spec.title,
    status: spec.status,
    detail,
    instance,
    error: code,
    message: detail,
    hint: hint ?? spec.hint,
    request_id: requestId,
    retryable: spec.retryable,
  };
}

/** The Problem stored on a failed file: same shape, the instance is the conversion's path. */
export function fileProblem(err: unknown, instance: string, requestId: string): Problem {
  // A message may quote the document's bytes; Postgres jsonb cannot store U+0000.
  const clean = (m: string): string => m.replace(/\u0000/g, '\uFFFD');
  if (err instanceof ApiError) return problemOf(err.code, clean(err.message), instance, requestId, err.hint);
  if (isDiskFull(err)) return problemOf('service_unavailable', DISK_FULL, instance, requestId);
  return problemOf('invalid_document', clean(err instanceof Error ? err.message : String(err)), instance, requestId);
}

// Failures of what the service stands on, rather than of the request: the client should retry.
// Kept here, once, for every caller (the HTTP answer, the job runner, the storage wrappers).

interface ErrorLike { code?: unknown; name?: unknown; message?: unknown }

/** Codes of a database or cache connection that failed, was refused, cut or timed out
 *  (ECONN* from the socket, CONNECTION_* / CONNECT_TIMEOUT from the `postgres` client,
 *  57P01 admin shutdown and 57P03 cannot connect now from a Postgres that is restarting). */
const DOWN_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE',
  'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT',
  'QUERY_DEADLINE',
  '57P01', '57P02', '57P03',
]);

/** True for a connection-level failure of Postgres or Redis. */
export function isDependencyDown(err: unknown): boolean {
  const e = err as ErrorLike | null;
  if (!e || typeof e !== 'object') return false;
  // ioredis gives up on a command with these while Redis is away.
  if (e.name === 'MaxRetriesPerRequestError') return true;
  if (typeof e.message === 'string' && /^(Connection is closed|Stream isn't writeable)/.test(e.message)) return true;
  return typeof e.code === 'string' && DOWN_CODES.has(e.code);
}

/** True when the disk (or the quota) is full. */
export function isDiskFull(err: unknown): boolean {
  const code = (err as ErrorLike | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

export const DISK_FULL = 'The server is out of disk space; retry shortly.';

/** The error a failed storage step answers with: 503 service_unavailable when the disk is full,
 *  else 503 conversion_unavailable naming the step. */
export function storageError(err: unknown, step: string): ApiError {
  if (isDiskFull(err)) return new ApiError('service_unavailable', DISK_FULL, { 'retry-after': '5' });
  return new ApiError('conversion_unavailable', `Storage failed while ${step}: ${(err as Error).message}`);
}
