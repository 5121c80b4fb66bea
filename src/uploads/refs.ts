// Sources named by reference in a convert (or estimate) request: `file_` ids of earlier sources
// or outputs of the same account, and `upl_` ids of completed uploads. Each becomes a staged
// source like a multipart file: a temp path the conversion adopts (renames) as its own blob.
//
// The temp path is a hard link to the stored blob, not a copy: free for a 5 GB file, and every
// conversion then owns its blob name outright — deleting or sweeping one conversion unlinks
// only its own name, never bytes another conversion still reads. Blobs are written once and
// never modified in place, which is what makes sharing an inode safe. (A filesystem without
// hard links gets a copy.)
//
// Errors: unknown or another account's id → 404 not_found; an upload not completed → 409
// upload_not_completed; an expired file or upload (or one the sweeper already removed) → 410
// file_expired. Everything is checked before anything is linked.
import { copyFile, link, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ApiError, storageError } from '../errors.js';
import type { Sql } from '../store/db.js';
import type { Blobs } from '../store/blobs.js';
import type { Principal } from '../store/accounts.js';
import type { ConvertRequest, StagedSource } from '../types.js';

export interface ResolvedSources {
  /** One staged source per reference, files first then uploads, each in request order. */
  sources: StagedSource[];
  /** Removes whatever temp links were not adopted; call when the request ends, always. */
  release(): Promise<void>;
}

type Origin = { blob: string } | { content: string };
interface Found { name: string; mime?: string; bytes: number; origin: Origin }

export async function resolveSources(
  sql: Sql, blobs: Blobs, principal: Pick<Principal, 'accountId'>, req: Pick<ConvertRequest, 'fileRefs' | 'uploadRefs'>,
): Promise<ResolvedSources> {
  const account = principal.accountId;
  const found: Found[] = [];
  if (req.fileRefs.length) {
    const rows = await sql`select id, name, mime, bytes, blob, content, expires_at <= now() as expired
                           from files where account_id = ${account} and id in ${sql(req.fileRefs)}`;
    const byId = new Map(rows.map((r) => [r.id as string, r]));
    for (const id of req.fileRefs) {
      const r = byId.get(id);
      if (!r) throw await missing(sql, account, id, 'file');
      if (r.expired) throw new ApiError('file_expired', `File ${id} has expired; files are kept 24 h unless stored with store: true.`);
      const origin: Origin | undefined = r.blob ? { blob: r.blob as string } : r.content !== null ? { content: r.content as string } : undefined;
      if (!origin) throw new ApiError('not_found', `File ${id} has no content.`);
      found.push({ name: r.name as string, mime: r.mime as string, bytes: Number(r.bytes ?? 0), origin });
    }
  }
  if (req.uploadRefs.length) {
    const rows = await sql`select id, name, bytes, status, blob, expires_at <= now() as expired
                           from uploads where account_id = ${account} and id in ${sql(req.uploadRefs)}`;
    const byId = new Map(rows.map((r) => [r.id as string, r]));
    for (const id of req.uploadRefs) {
      const r = byId.get(id);
      if (!r) throw await missing(sql, account, id, 'upload');
      if (r.expired) throw new ApiError('file_expired', `Upload ${id} has expired; uploads are kept 24 h.`);
      if (r.status !== 'completed' || !r.blob) {
        throw new ApiError('upload_not_completed', `Upload ${id} is ${r.status}: send every part and POST /v1/uploads/${id}/complete first.`);
      }
      // No media type was declared for an upload: the converter's sniffing decides.
      found.push({ name: r.name as string, bytes: Number(r.bytes), origin: { blob: r.blob as string } });
    }
  }

  const made: string[] = [];
  const release = async (): Promise<void> => { await Promise.all(made.map((p) => rm(p, { force: true }))); };
  try {
    const sources: StagedSource[] = [];
    for (const f of found) {
      const target = path.join(blobs.tmpDir, `ref_${randomBytes(12).toString('hex')}`);
      made.push(target);
      await stage(blobs, f.origin, target);
      sources.push({ name: f.name, mime: f.mime, path: target, bytes: f.bytes });
    }
    return { sources, release };
  } catch (err) {
    await release();
    throw err;
  }
}

async function stage(blobs: Blobs, origin: Origin, target: string): Promise<void> {
  if ('content' in origin) {
    await writeFile(target, origin.content, 'utf8');
    return;
  }
  const from = blobs.pathOf(origin.blob);
  try {
    await link(from, target);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Swept between the check and the link: it expired.
    if (code === 'ENOENT') throw new ApiError('file_expired', 'The referenced file has expired.');
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EMLINK') {
      throw storageError(err, 'staging a referenced file');
    }
    await copyFile(from, target);
  }
}

async function missing(sql: Sql, account: string, id: string, what: 'file' | 'upload'): Promise<ApiError> {
  const [gone] = await sql`select 1 from expired_refs where id = ${id} and account_id = ${account}`;
  if (gone) return new ApiError('file_expired', `The ${what} ${id} has expired and was deleted.`);
  return new ApiError('not_found', `No ${what} ${id}.`);
}
