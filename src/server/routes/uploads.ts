// POST /v1/uploads, GET /v1/uploads/{id}, PUT /v1/uploads/{id}/parts/{number},
// POST /v1/uploads/{id}/complete: chunked uploads for files over the edge's body limit.
// Parts are raw bodies streamed to disk; everything else is small JSON.
import { ApiError } from '../../errors.js';
import { requireScope, requireSubscription } from '../auth.js';
import type { Principal } from '../../store/accounts.js';
import { principalOf, type Deps } from '../deps.js';
import { readJson, safeName } from '../body.js';
import { sendJson, type Ctx } from '../respond.js';
import type { Router } from '../router.js';
import { UploadService, MAX_PARTS } from '../../uploads/service.js';
import { readToFile } from '../read-to-file.js';

const SMALL_JSON = 1024 * 1024;

function bad(detail: string): ApiError {
  return new ApiError('invalid_request', detail);
}

function onlyFields(body: Record<string, unknown>, allowed: string[]): void {
  for (const k of Object.keys(body)) if (!allowed.includes(k)) throw bad(`Unknown field "${k}".`);
}

function objectBody(v: unknown): Record<string, unknown> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw bad('The body must be a JSON object.');
  return v as Record<string, unknown>;
}

function partNumber(raw: string | undefined): number {
  const n = Number(raw);
  if (!raw || !/^\d+$/.test(raw) || n < 1 || n > MAX_PARTS) throw bad(`The part number must be an integer from 1 to ${MAX_PARTS}.`);
  return n;
}

function completeParts(body: Record<string, unknown>): Array<{ number: number; etag: string }> {
  onlyFields(body, ['parts']);
  const parts = body.parts;
  if (!Array.isArray(parts) || parts.length === 0) throw bad('"parts" must be a non-empty array of {etag, number}.');
  if (parts.length > MAX_PARTS) throw bad(`At most ${MAX_PARTS} parts.`);
  const seen = new Set<number>();
  return parts.map((x, i) => {
    const o = objectBody(x);
    onlyFields(o, ['etag', 'number', 'bytes']); // bytes: a GET's parts list may be sent back as is
    if (typeof o.etag !== 'string' || o.etag === '') throw bad(`"parts[${i}].etag" must be a string.`);
    if (!Number.isInteger(o.number) || (o.number as number) < 1 || (o.number as number) > MAX_PARTS) {
      throw bad(`"parts[${i}].number" must be an integer from 1 to ${MAX_PARTS}.`);
    }
    if (seen.has(o.number as number)) throw bad(`Part ${o.number as number} is named twice.`);
    seen.add(o.number as number);
    return { number: o.number as number, etag: o.etag };
  });
}

export function registerUploads(router: Router, deps: Deps): UploadService {
  const uploads = new UploadService(deps.db.sql, deps.blobs, {
    maxPartBytes: deps.config.maxBodyBytes,
    fileBytesOf: (p: Principal) => deps.limits(p.plan).fileBytes,
  });

  const caller = async (ctx: Ctx): Promise<Principal> => {
    const p = await principalOf(deps, ctx);
    requireScope(p, 'uploads');
    requireSubscription(p);
    return p;
  };

  router.add('POST', '/v1/uploads', async (ctx) => {
    const p = await caller(ctx);
    const body = objectBody(await readJson(ctx, SMALL_JSON));
    onlyFields(body, ['bytes', 'name']);
    if (!Number.isSafeInteger(body.bytes) || (body.bytes as number) < 1) throw bad('"bytes" must be an integer of at least 1.');
    if (typeof body.name !== 'string' || body.name.trim() === '') throw bad('"name" must be a non-empty string.');
    const created = await uploads.create(p, { bytes: body.bytes as number, name: safeName(body.name) });
    sendJson(ctx, 201, created, { location: `/v1/uploads/${created.id}` });
  });

  router.add('GET', '/v1/uploads/:id', async (ctx) => {
    const p = await caller(ctx);
    sendJson(ctx, 200, await uploads.show(p, ctx.params.id!));
  });

  router.add('PUT', '/v1/uploads/:id/parts/:number', async (ctx) => {
    const p = await caller(ctx);
    const number = partNumber(ctx.params.number);
    // Refuse before reading: a client should not send 64 MiB to learn the upload is gone.
    const u = await uploads.beforePart(p, ctx.params.id!);
    const tooLarge = () => new ApiError('upload_too_large', `A part may be at most the upload's part_size, ${u.part_size} bytes.`);
    // A part of the size its number has in the layout goes straight to its place in the file.
    const slot = await uploads.claimSlot(u, number, Number(ctx.headers['content-length'] ?? 'NaN'));
    if (!slot) {
      const file = await readToFile(ctx, uploads.partTempPath(), u.part_size, tooLarge);
      if (file.bytes === 0) throw bad('A part must have at least one byte.');
      sendJson(ctx, 200, await uploads.recordPart(p, u, number, file));
      return;
    }
    const file = await readToFile(ctx, slot.path, slot.bytes, tooLarge, { offset: slot.offset })
      .catch(async (err: unknown) => { await slot.release(); throw err; });
    if (file.bytes !== slot.bytes) {
      await slot.release();
      throw bad(`The body had ${file.bytes} bytes, not the ${slot.bytes} its Content-Length said.`);
    }
    sendJson(ctx, 200, await uploads.recordPart(p, u, number, file, slot));
  });

  router.add('POST', '/v1/uploads/:id/complete', async (ctx) => {
    const p = await caller(ctx);
    const parts = completeParts(objectBody(await readJson(ctx, SMALL_JSON)));
    sendJson(ctx, 200, await uploads.complete(p, ctx.params.id!, parts));
  });

  return uploads;
}
