// Talking to docpipe from the bench: multipart bodies built once per corpus file, and one
// "convert this file and wait for the outcome" call that follows a 202 by polling the
// conversion until it is terminal. Throughput scenarios count only sources that completed.
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { Dispatcher } from 'undici';
import type { CorpusFile } from './corpus.js';

export interface Body {
  body: Buffer;
  contentType: string;
}

/** A multipart/form-data body: the file as part `file`, then the option fields. */
export function multipart(file: { name: string; type: string; data: Buffer }, fields: Record<string, string> = {}): Body {
  const boundary = `----bench${randomBytes(12).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  }
  parts.push(Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${file.name}"\r\n`
    + `content-type: ${file.type}\r\n\r\n`));
  parts.push(file.data, Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

const TYPES: Record<string, string> = {
  pdf: 'application/pdf',
  png: 'image/png',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
};

export function fileBody(f: CorpusFile, fields: Record<string, string> = {}): Body {
  const ext = f.name.split('.').pop() ?? '';
  return multipart({ name: f.name, type: TYPES[ext] ?? 'application/octet-stream', data: readFileSync(f.path) }, fields);
}

export interface Outcome {
  /** Status of the submit. */
  status: number;
  asyncReason: string | null;
  /** Final conversion status ('' when the submit was refused). */
  final: string;
  /** Pages of the source(s) that completed. */
  pages: number;
  conversionId?: string;
  error?: string;
}

interface ConversionLike {
  id: string;
  status: string;
  async_reason: string | null;
  files?: Array<{ role: string; status: string | null; pages: number | null; error?: unknown }>;
}

const TERMINAL = new Set(['completed', 'completed_with_errors', 'failed']);

function outcomeOf(status: number, c: ConversionLike, asyncReason: string | null): Outcome {
  const sources = (c.files ?? []).filter((f) => f.role === 'source');
  const done = sources.filter((f) => f.status === 'completed');
  const failed = sources.find((f) => f.status === 'failed');
  return {
    status, asyncReason, final: c.status, conversionId: c.id,
    pages: done.reduce((a, f) => a + (f.pages ?? 1), 0),
    error: failed ? JSON.stringify(failed.error).slice(0, 300) : undefined,
  };
}

async function json(d: Dispatcher, key: string, method: 'GET' | 'POST', path: string, body?: Body, headers: Record<string, string> = {})
  : Promise<{ status: number; data: unknown; text: string }> {
  const res = await d.request({
    method, path, body: body?.body,
    headers: { 'x-api-key': key, ...(body ? { 'content-type': body.contentType } : {}), ...headers },
  });
  const text = await res.body.text();
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    data = undefined;
  }
  return { status: res.statusCode, data, text };
}

/**
 * Submits one multipart body to `/v1/convert/<endpoint>` and, on 202, polls until the conversion
 * ends (or `pollUntil` passes). `poll: false` returns right after the submit.
 */
export async function convert(d: Dispatcher, key: string, endpoint: string, body: Body,
  opts: { query?: string; headers?: Record<string, string>; poll?: boolean; pollMs?: number; timeoutMs?: number } = {}): Promise<Outcome> {
  const r = await json(d, key, 'POST', `/v1/convert/${endpoint}${opts.query ?? ''}`, body, opts.headers);
  if (r.status !== 200 && r.status !== 202) return { status: r.status, asyncReason: null, final: '', pages: 0, error: r.text.slice(0, 300) };
  const c = r.data as ConversionLike;
  if (r.status === 200 || opts.poll === false || TERMINAL.has(c.status)) return outcomeOf(r.status, c, c.async_reason);
  const until = Date.now() + (opts.timeoutMs ?? 600_000);
  let latest = c;
  while (!TERMINAL.has(latest.status)) {
    if (Date.now() > until) return { ...outcomeOf(r.status, latest, c.async_reason), error: 'timed out waiting for the conversion' };
    await new Promise((res) => setTimeout(res, opts.pollMs ?? 100));
    const g = await json(d, key, 'GET', `/v1/conversions/${c.id}`);
    if (g.status !== 200) return { status: r.status, asyncReason: c.async_reason, final: `GET ${g.status}`, pages: 0, error: g.text.slice(0, 300) };
    latest = g.data as ConversionLike;
  }
  return outcomeOf(r.status, latest, c.async_reason);
}

/** The JSON of one request, for setup steps (uploads, probes). */
export { json as requestJson };
