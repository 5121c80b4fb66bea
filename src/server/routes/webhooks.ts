// Webhook endpoints (DESIGN.md §7): create (the secret is shown once), list, delete, the log of
// delivery attempts, and a signed test event sent at once. Scope `webhooks` and an active
// subscription. Target URLs pass the SSRF guard here and again at every try.
import { ApiError } from '../../errors.js';
import { requireScope, requireSubscription } from '../auth.js';
import { principalOf, type Deps } from '../deps.js';
import { readJson } from '../body.js';
import { sendJson, type Ctx } from '../respond.js';
import type { Router } from '../router.js';
import { decodeCursor, encodeCursor } from '../../store/cursor.js';
import { assertPublicUrl, BlockedAddressError } from '../../net/ssrf.js';
import { newId } from '../../store/ids.js';
import { EVENT_TYPES, TEST_EVENT_TYPE, eventBody } from '../../webhooks/outbox.js';
import type { Sender } from '../../webhooks/deliver.js';
import {
  attemptJson, countEndpoints, createEndpoint, deleteEndpoint, endpointJson, getEndpoint, insertTestEvent, listAttempts,
  listEndpoints, logTestAttempt, type EndpointRow,
} from '../../webhooks/store.js';

export const MAX_ENDPOINTS = 20;
const MAX_URL_LENGTH = 2048;
const BODY_LIMIT = 16 * 1024;

async function validUrl(v: unknown, allowPrivate: boolean): Promise<string> {
  if (typeof v !== 'string' || v.trim() === '') throw new ApiError('invalid_request', '"url" must be a non-empty string.');
  if (v.length > MAX_URL_LENGTH) throw new ApiError('invalid_request', `"url" is longer than ${MAX_URL_LENGTH} characters.`);
  try {
    return (await assertPublicUrl(v, { allowPrivate })).href;
  } catch (err) {
    if (err instanceof BlockedAddressError) {
      throw new ApiError('invalid_request', `"url" is not allowed: ${err.message} Webhook targets must be public `
        + 'http(s) addresses (a self-hosted server may set ALLOW_PRIVATE_NETWORK=1 to reach private ones).');
    }
    if (err instanceof ApiError) throw new ApiError('invalid_request', `"url": ${err.message}`);
    throw err;
  }
}

function validEventTypes(v: unknown): string[] {
  const allowed = EVENT_TYPES.join(', ');
  if (!Array.isArray(v) || v.length === 0) throw new ApiError('invalid_request', `"eventTypes" must be a non-empty array of: ${allowed}.`);
  const seen = new Set<string>();
  for (const t of v) {
    if (typeof t !== 'string' || !(EVENT_TYPES as readonly string[]).includes(t)) {
      throw new ApiError('invalid_request', `"eventTypes" holds ${JSON.stringify(t)}; event types are: ${allowed}.`);
    }
    if (seen.has(t)) throw new ApiError('invalid_request', `"eventTypes" names ${t} twice.`);
    seen.add(t);
  }
  return [...seen];
}

export function registerWebhooks(router: Router, deps: Deps, sender: Sender): void {
  const sql = deps.db.sql;

  const caller = async (ctx: Ctx) => {
    const p = await principalOf(deps, ctx);
    requireScope(p, 'webhooks');
    requireSubscription(p);
    return p;
  };
  const endpointOf = async (ctx: Ctx, accountId: string): Promise<EndpointRow> => {
    const e = await getEndpoint(sql, accountId, ctx.params.id!);
    if (!e) throw new ApiError('not_found', `No webhook endpoint ${ctx.params.id}.`);
    return e;
  };

  router.add('POST', '/v1/webhooks', async (ctx) => {
    const p = await caller(ctx);
    const type = (ctx.headers['content-type'] ?? '').toLowerCase();
    if (type && !type.startsWith('application/json')) throw new ApiError('invalid_request', 'The body must be application/json.');
    const body = await readJson(ctx, BODY_LIMIT);
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new ApiError('invalid_request', 'The body must be a JSON object.');
    const fields = body as Record<string, unknown>;
    const unknown = Object.keys(fields).filter((k) => k !== 'url' && k !== 'eventTypes');
    if (unknown.length) throw new ApiError('invalid_request', `Unknown field(s): ${unknown.join(', ')}; a webhook takes url and eventTypes.`);
    const eventTypes = validEventTypes(fields.eventTypes);
    const url = await validUrl(fields.url, deps.config.allowPrivateNetwork);
    if (await countEndpoints(sql, p.accountId) >= MAX_ENDPOINTS) {
      throw new ApiError('invalid_request', `An account has at most ${MAX_ENDPOINTS} webhook endpoints; delete one first.`);
    }
    sendJson(ctx, 201, endpointJson(await createEndpoint(sql, p.accountId, url, eventTypes), true));
  });

  router.add('GET', '/v1/webhooks', async (ctx) => {
    const p = await caller(ctx);
    const rows = await listEndpoints(sql, p.accountId);
    sendJson(ctx, 200, { object: 'list', data: rows.map((e) => endpointJson(e)), next_cursor: null });
  });

  router.add('DELETE', '/v1/webhooks/:id', async (ctx) => {
    const p = await caller(ctx);
    if (!await deleteEndpoint(sql, p.accountId, ctx.params.id!)) throw new ApiError('not_found', `No webhook endpoint ${ctx.params.id}.`);
    sendJson(ctx, 200, { id: ctx.params.id, object: 'webhook_endpoint', deleted: true });
  });

  router.add('GET', '/v1/webhooks/:id/deliveries', async (ctx) => {
    const p = await caller(ctx);
    const e = await endpointOf(ctx, p.accountId);
    const limit = limitOf(ctx);
    let before: number | undefined;
    const cursor = ctx.query.get('cursor');
    if (cursor) {
      const c = decodeCursor(cursor);
      if (!c || !Number.isSafeInteger(c.a)) throw new ApiError('invalid_request', '"cursor" is not a cursor this API returned.');
      before = c.a as number;
    }
    const rows = await listAttempts(sql, e.id, limit + 1, before);
    const page = rows.slice(0, limit);
    sendJson(ctx, 200, {
      object: 'list',
      data: page.map(attemptJson),
      next_cursor: rows.length > limit ? encodeCursor({ a: Number(page[page.length - 1]!.id) }) : null,
    });
  });

  router.add('POST', '/v1/webhooks/:id/test', async (ctx) => {
    const p = await caller(ctx);
    const e = await endpointOf(ctx, p.accountId);
    const id = newId('evt');
    const createdAt = new Date();
    const body = eventBody(id, TEST_EVENT_TYPE, createdAt, endpointJson(e));
    await insertTestEvent(sql, p.accountId, id, TEST_EVENT_TYPE, body, createdAt);
    const out = await sender.send(e.url, e.secret, id, body);
    sendJson(ctx, 200, attemptJson(await logTestAttempt(sql, e.id, id, TEST_EVENT_TYPE, out)));
  });
}

function limitOf(ctx: Ctx): number {
  const raw = ctx.query.get('limit');
  if (raw === null || raw === '') return 20;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 100) throw new ApiError('invalid_request', '"limit" must be an integer from 1 to 100.');
  return n;
}
