// POST /v1/convert/{kind}: receive the body (JSON or multipart to disk), accept the conversion,
// and answer 200 when it finishes inside the wait window, else 202 with async_reason. A retry
// with the Idempotency-Key of an earlier request answers that conversion as it is now (200 when
// finished, else 202) with `Idempotent-Replayed: true`, and creates nothing.
import { rm } from 'node:fs/promises';
import { ApiError } from '../../errors.js';
import { ENDPOINTS, KINDS } from '../../converters/registry.js';
import type { ConverterKind } from '../../converters/types.js';
import { requireScope, requireSubscription } from '../auth.js';
import { checkRate, principalOf, type Deps } from '../deps.js';
import { readJson, readMultipart } from '../body.js';
import { onCleanup, sendJson, type Ctx } from '../respond.js';
import type { Router } from '../router.js';
import { fromJson, fromMultipart, MAX_SOURCES } from '../convert-request.js';
import type { ConvertRequest } from '../../types.js';
import { conversionJson, snapshotJson } from '../../store/conversion-json.js';
import { readConversion, type ConversionStatus } from '../../store/conversions.js';
import type { AsyncReason, Track } from '../../jobs/service.js';
import { withShownContents } from '../../jobs/outputs.js';
import { idempotencyKeyOf } from '../../billing/admission.js';

const TERMINAL: ReadonlySet<ConversionStatus> = new Set(['completed', 'completed_with_errors', 'failed']);

export const MAX_WAIT_S = 60;

/** Reads the body of a convert or estimate request into a ConvertRequest. */
export async function readConvertRequest(deps: Deps, ctx: Ctx, kind: ConverterKind): Promise<ConvertRequest> {
  const type = (ctx.headers['content-type'] ?? '').toLowerCase();
  if (type.startsWith('multipart/form-data')) {
    const mp = await readMultipart(ctx, deps.blobs.tmpDir, {
      maxBytes: deps.config.maxBodyBytes, maxFiles: MAX_SOURCES, maxFields: 50, maxFieldBytes: 64 * 1024,
    });
    return fromMultipart(kind, mp);
  }
  if (type.startsWith('application/json') || type === '') {
    const body = await readJson(ctx, deps.config.maxJsonBytes);
    return fromJson(ctx, kind, body, deps.blobs.tmpDir);
  }
  throw new ApiError('invalid_request', `Content-Type must be application/json or multipart/form-data, not "${type}".`);
}

/** Files the service stages for the request (fetched URLs) go with the request's clean-ups. */
export function stagedBy(ctx: Ctx): Track {
  return (file) => onCleanup(ctx, () => rm(file, { force: true }));
}

/** The wait window from `wait` and `Prefer` (RFC 7240: respond-async, wait=N). */
export function waitWindow(ctx: Ctx, fallback: number): { seconds: number; reason?: AsyncReason } {
  const prefer = (ctx.headers.prefer ?? '').toLowerCase().split(',').map((s) => s.trim());
  if (prefer.includes('respond-async')) return { seconds: 0, reason: 'respond_async' };
  let seconds = fallback;
  const w = prefer.map((p) => /^wait\s*=\s*(\d+)$/.exec(p)).find(Boolean);
  if (w) seconds = Math.min(MAX_WAIT_S, Number(w[1]));
  const q = ctx.query.get('wait');
  if (q !== null && q !== '') {
    // decimal digits only: Number() would also take "0x10", "1e1" or " 5 "
    const n = /^\d{1,3}$/.test(q) ? Number(q) : NaN;
    if (!Number.isInteger(n) || n < 0 || n > MAX_WAIT_S) throw new ApiError('invalid_request', `"wait" must be an integer from 0 to ${MAX_WAIT_S} (seconds).`);
    seconds = n;
  }
  return { seconds, reason: seconds === 0 ? 'respond_async' : undefined };
}

/** The answer when the conversion to show is gone: a replay's (its Idempotency-Key outlives
 *  it) or one deleted while its request waited. */
function deleted(id: string, replayed: boolean): ApiError {
  return replayed
    ? new ApiError('not_found', `The conversion this Idempotency-Key created (${id}) has been deleted, so this retry has nothing to show.`, {}, {
      hint: 'The request this key names was done and its conversion deleted since; a retry with the same key creates nothing. '
        + 'To convert the document again, send it with a new Idempotency-Key (or without one).',
    })
    : new ApiError('not_found', `The conversion (${id}) was deleted while this request waited for it.`, {}, {
      hint: 'It was deleted (DELETE /v1/conversions/{id}) before it finished; send the request again to convert the document.',
    });
}

export function registerConvert(router: Router, deps: Deps): void {
  for (const kind of KINDS) {
    router.add('POST', `/v1/convert/${ENDPOINTS[kind]}`, async (ctx) => {
      const p = await principalOf(deps, ctx);
      requireScope(p, 'convert');
      requireSubscription(p);
      const held = await checkRate(deps, p);
      const window = waitWindow(ctx, deps.config.syncWaitDefaultS);
      const idempotencyKey = idempotencyKeyOf(ctx.headers);
      const req = await readConvertRequest(deps, ctx, kind);
      const submitted = await deps.conversions.accept(p, req, { method: ctx.method, path: ctx.path, idempotencyKey, window }, stagedBy(ctx));
      const replayed = submitted.kind === 'replay';
      const id = replayed ? submitted.conversionId : submitted.accepted.conversionId;
      const reason = replayed ? undefined
        : await deps.conversions.waitFor(submitted.accepted, window.seconds, window.reason);
      // Answered from what its transactions stored, no read back: a conversion finished in this
      // request (rendered, or every job run here and recorded), or one answered 202 at once for
      // the reason stored with it. One whose jobs ran elsewhere, or that is still going after
      // the wait, is read as it is now.
      const stored = replayed ? undefined : submitted.accepted;
      const snapshot = stored && (reason ? reason === stored.storedReason : stored.finished) ? stored.snapshot : undefined;
      const location = { location: `/v1/conversions/${id}` };
      if (snapshot) {
        // The balance as the gate last answered this request: right after its reservation
        // (answered 202 at once), or after the settle that ended it here (answered 200), or, for
        // a conversion that reserved nothing (a render), as the rate limit read it. Otherwise
        // (a settle the gate did not answer) it is read again.
        const balance = stored!.balance !== undefined ? stored!.balance
          : await deps.ledger.balance(p.accountId, snapshot.row.credits_reserved === 0 ? held : undefined);
        sendJson(ctx, reason ? 202 : 200, snapshotJson(snapshot.row, snapshot.files, balance), location);
        return;
      }
      const snap = await readConversion(deps.db.sql, p.accountId, id, { after: -1, withContent: true });
      if (!snap) throw deleted(id, replayed);
      snap.files = await withShownContents(deps.blobs, snap.files);
      const status = replayed ? (TERMINAL.has(snap.row.status) ? 200 : 202) : (reason ? 202 : 200);
      const balance = await deps.ledger.balance(p.accountId);
      sendJson(ctx, status, conversionJson(snap, balance),
        { location: `/v1/conversions/${id}`, ...(replayed ? { 'Idempotent-Replayed': 'true' } : {}) });
    });
  }
}
