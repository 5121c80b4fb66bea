// GET /v1/conversions, GET/DELETE /v1/conversions/{id}, and the content download of a file.
import { ApiError } from '../../errors.js';
import { requireScope, requireSubscription } from '../auth.js';
import { principalOf, type Deps } from '../deps.js';
import { sendJson, type Ctx } from '../respond.js';
import { sendContent } from '../stream-file.js';
import type { Router } from '../router.js';
import { conversionJson, conversionsJson } from '../../store/conversion-json.js';
import { decodeCursor, encodeCursor } from '../../store/cursor.js';
import { getFileRow, readConversion, readConversions } from '../../store/conversions.js';
import { placedForReading, withShownContents } from '../../jobs/outputs.js';

export const LIST_DEFAULT = 20;
export const LIST_MAX = 100;

function intParam(ctx: Ctx, name: string, min: number, max: number, fallback: number): number {
  const raw = ctx.query.get(name);
  if (raw === null || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ApiError('invalid_request', `"${name}" must be an integer from ${min} to ${max}.`);
  }
  return n;
}

export function registerConversions(router: Router, deps: Deps): void {
  const sql = deps.db.sql;

  router.add('GET', '/v1/conversions', async (ctx) => {
    const p = await principalOf(deps, ctx);
    requireScope(p, 'read');
    requireSubscription(p);
    const limit = intParam(ctx, 'limit', 1, LIST_MAX, LIST_DEFAULT);
    const cursor = ctx.query.get('cursor');
    let after: { createdAt: Date; id: string } | undefined;
    if (cursor) {
      const c = decodeCursor(cursor);
      if (!c || typeof c.t !== 'string' || typeof c.i !== 'string' || Number.isNaN(Date.parse(c.t))) {
        throw new ApiError('invalid_request', '"cursor" is not a cursor this API returned.');
      }
      after = { createdAt: new Date(c.t), id: c.i };
    }
    const read = await readConversions(sql, p.accountId, limit + 1, after);
    const more = read.length > limit;
    const page = more ? read.slice(0, limit) : read;
    const last = page[page.length - 1]?.row;
    sendJson(ctx, 200, {
      object: 'list',
      data: conversionsJson(page, await deps.ledger.balance(p.accountId)),
      next_cursor: more && last ? encodeCursor({ t: last.created_at.toISOString(), i: last.id }) : null,
    });
  });

  router.add('GET', '/v1/conversions/:id', async (ctx) => {
    const p = await principalOf(deps, ctx);
    requireScope(p, 'read');
    requireSubscription(p);
    let filesAfter = -1;
    const fc = ctx.query.get('files_cursor');
    if (fc) {
      const c = decodeCursor(fc);
      if (!c || typeof c.p !== 'number') throw new ApiError('invalid_request', '"files_cursor" is not a cursor this API returned.');
      filesAfter = c.p;
    }
    const snap = await readConversion(sql, p.accountId, ctx.params.id!, { after: filesAfter, withContent: true });
    if (!snap) throw new ApiError('not_found', `No conversion ${ctx.params.id}.`);
    snap.files = await withShownContents(deps.blobs, snap.files);
    sendJson(ctx, 200, conversionJson(snap, await deps.ledger.balance(p.accountId)));
  });

  router.add('DELETE', '/v1/conversions/:id', async (ctx) => {
    const p = await principalOf(deps, ctx);
    requireScope(p, 'convert');
    requireSubscription(p);
    const gone = await deps.conversions.remove(p.accountId, ctx.params.id!);
    if (!gone) throw new ApiError('not_found', `No conversion ${ctx.params.id}.`);
    sendJson(ctx, 200, { id: ctx.params.id, object: 'conversion', deleted: true });
  });

  router.add('GET', '/v1/conversions/:id/files/:fileId/content', async (ctx) => {
    const p = await principalOf(deps, ctx);
    requireScope(p, 'read');
    requireSubscription(p);
    const f = await getFileRow(sql, p.accountId, ctx.params.id!, ctx.params.fileId!);
    if (!f) throw new ApiError('not_found', `No file ${ctx.params.fileId} in conversion ${ctx.params.id}.`);
    const expiresAt = (f as { expires_at?: Date | null }).expires_at;
    if (expiresAt && expiresAt.getTime() <= Date.now()) throw new ApiError('file_expired', `File ${f.id} has expired; files are kept 24 h unless stored.`);
    // an ASCII fallback and the exact name in UTF-8 (RFC 6266 / RFC 5987 filename*)
    const disposition = `inline; filename="${f.name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeRFC5987(f.name)}`;
    if (f.content !== null) {
      await sendContent(ctx, { data: Buffer.from(f.content) }, f.mime, { 'content-disposition': disposition });
      return;
    }
    if (!f.blob) throw new ApiError('not_found', `File ${f.id} has no content yet.`);
    await placedForReading(deps.blobs, f.blob, f.id);
    await sendContent(ctx, { path: deps.blobs.pathOf(f.blob) }, f.mime, { 'content-disposition': disposition });
  });
}

/** A value for `filename*`: UTF-8, percent-encoded but for RFC 5987's attr-chars. */
function encodeRFC5987(s: string): string {
  return encodeURIComponent(s).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
