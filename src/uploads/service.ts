// Chunked uploads (DESIGN.md §6): create, receive parts, complete, show. Disk layout under the
// blob store, in `<account>/<upl>.parts/`:
// - `data`: the upload's bytes in their places. A part sent with the size its number has in the
//   upload's layout (part n at byte (n − 1) × part_size, part_size bytes, the last one the rest)
//   is written there, by the one request that claimed its slot (an upload_slots row: no other
//   request or process writes that region). Its row names `data` as its blob. The file goes
//   when its last claim is given back (a part that failed first leaves nothing behind).
// - `<number>.<token>`: any other part (another size, no Content-Length, or a re-send of a
//   slot already claimed), a file of its own swapped in by its row.
// Completing an upload whose named parts are all in their places takes `data` as it is (a hard
// link, no copy); otherwise the parts are copied one after another into a new file. The
// assembled file is `<account>/<upl>.<token>`.
//
// Size rules at completion: the named parts must all have arrived with the given etags (else
// 409 upload_not_completed); their total larger than the declared `bytes` or than the plan's
// per-file size is 413 upload_too_large, smaller is 409 upload_not_completed.
import { constants } from 'node:fs';
import { link, mkdir, open, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ApiError, isDependencyDown, storageError } from '../errors.js';
import type { Sql } from '../store/db.js';
import type { Blobs, Pending } from '../store/blobs.js';
import { newId } from '../store/ids.js';
import type { Principal } from '../store/accounts.js';
import {
  insertUpload, getUpload, listParts, wasExpired, recordPart, claimForCompletion, releaseClaim, markCompleted, claimPartSlot, releasePartSlot,
  uploadJson, type PartRow, type UploadJson, type UploadRow,
} from './store.js';
import { bareEtag, concatFiles, multipartEtag, quoteEtag, type Source } from './assemble.js';

const MiB = 1024 * 1024;
export const DEFAULT_PART_SIZE = 64 * MiB;
export const MIN_PART_SIZE = 5 * MiB;
export const MAX_PARTS = 10_000;
/** Uploads are kept 24 h from creation, and 24 h from completion once completed. */
export const UPLOAD_TTL_MS = 24 * 60 * 60 * 1000;

export interface UploadSettings {
  /** The largest body a part may have (the edge cap, MAX_BODY_BYTES). */
  maxPartBytes: number;
  /** The plan's per-file size for a principal (planLimits + overrides). */
  fileBytesOf(p: Principal): number;
}

/** part_size: 64 MiB, or less under a small edge cap, or more when 10,000 parts would not do. */
export function partSizeFor(bytes: number, maxPartBytes: number): number {
  const size = Math.max(Math.min(DEFAULT_PART_SIZE, maxPartBytes), MIN_PART_SIZE);
  return Math.max(size, Math.ceil(bytes / MAX_PARTS));
}

export class UploadService {
  constructor(private sql: Sql, private blobs: Blobs, private settings: UploadSettings) {}

  async create(p: Principal, input: { bytes: number; name: string }): Promise<UploadJson> {
    const limit = this.settings.fileBytesOf(p);
    if (input.bytes > limit) {
      throw new ApiError('upload_too_large', `${input.bytes} bytes is over the ${p.plan} plan's per-file size of ${limit} bytes.`);
    }
    const partSize = partSizeFor(input.bytes, this.settings.maxPartBytes);
    const row = await insertUpload(this.sql, {
      id: newId('upl'), accountId: p.accountId, name: input.name, bytes: input.bytes,
      partSize, partCount: Math.ceil(input.bytes / partSize), ttlMs: UPLOAD_TTL_MS,
    });
    return uploadJson(row, []);
  }

  async show(p: Principal, id: string): Promise<UploadJson> {
    const u = await this.live(p, id);
    return uploadJson(u, await listParts(this.sql, u.id));
  }

  /** The upload, or the 404 / 410 a client gets for it. */
  async live(p: Principal, id: string): Promise<UploadRow> {
    const u = await getUpload(this.sql, p.accountId, id);
    if (!u) {
      if (await wasExpired(this.sql, p.accountId, id)) throw expired(id);
      throw new ApiError('not_found', `No upload ${id}.`);
    }
    if (u.expired) throw expired(id);
    return u;
  }

  /** Checks a part may be sent now, before its body is read. */
  async beforePart(p: Principal, id: string): Promise<UploadRow> {
    const u = await this.live(p, id);
    refuseIfNotPending(u.id, u.status);
    return u;
  }

  /** Where a part's body is received (a temp file, moved into place by recordPart). */
  partTempPath(): string {
    return path.join(this.blobs.tmpDir, `part_${randomBytes(12).toString('hex')}`);
  }

  /**
   * The place of part `number` in the upload's `data` file, claimed for this request, when a
   * body of `declared` bytes fits it exactly and no request claimed it before; else undefined
   * (the part goes to a file of its own). The caller releases the claim when the body could not
   * be written or recorded, so that a re-send may have the place.
   */
  async claimSlot(u: UploadRow, number: number, declared: number): Promise<Slot | undefined> {
    const region = regionOf(u, number);
    if (region === undefined || declared !== region.bytes) return undefined;
    if (!await claimPartSlot(this.sql, u.id, number)) return undefined;
    const data = this.blobs.pathOf(dataBlob(u));
    // The upload's file goes with its last claim: a part that failed first (a full disk, a client
    // gone) leaves nothing of the upload on disk.
    const release = () => releasePartSlot(this.sql, u.id, number, () => rm(data, { force: true })).catch(() => {});
    try {
      await mkdir(path.dirname(data), { recursive: true });
      await (await open(data, constants.O_WRONLY | constants.O_CREAT)).close(); // never truncated
    } catch (err) {
      await release();
      throw storageError(err, `opening the upload's file for part ${number}`);
    }
    return { path: data, ...region, release };
  }

  /**
   * Keeps a received part (staged, recorded, placed) and swaps it in for any earlier copy; a part
   * written in its slot needs only its row.
   */
  async recordPart(p: Principal, u: UploadRow, number: number, file: { path: string; bytes: number; md5: string }, slot?: Slot) {
    const inPlace = slot !== undefined;
    const blob = inPlace ? dataBlob(u) : `${partsDir(u)}/${number}.${randomBytes(6).toString('hex')}`;
    // Waits in pending/ until its row is committed (see store/blobs.ts).
    let staged: Pending | undefined;
    try {
      // A part in its place is flushed there; any other is flushed as it is staged.
      if (inPlace) await this.blobs.flushPlaced(blob);
      else staged = await this.blobs.stage(file.path, blob);
    } catch (err) {
      await slot?.release();
      throw storageError(err, `keeping part ${number}`);
    }
    const etag = quoteEtag(file.md5);
    const outcome = await recordPart(this.sql, p.accountId, u.id, { number, etag, bytes: file.bytes, blob })
      .catch(async (err) => {
        // A lost connection may have lost only the commit's answer: the pending sweep decides,
        // and the slot stays claimed (its row may exist).
        if (!isDependencyDown(err)) {
          if (staged) await this.blobs.discard([staged]);
          await slot?.release();
        }
        throw err;
      });
    if (outcome.ok && staged) await this.blobs.place([staged]);
    if (!outcome.ok) {
      if (staged) await this.blobs.discard([staged]);
      await slot?.release();
      if (outcome.why === 'gone') {
        throw (await wasExpired(this.sql, p.accountId, u.id)) ? expired(u.id) : new ApiError('not_found', `No upload ${u.id}.`);
      }
      if (outcome.why === 'expired') throw expired(u.id);
      refuseIfNotPending(u.id, outcome.status!);
    } else if (outcome.replaced && outcome.replaced !== dataBlob(u)) {
      await this.blobs.remove([outcome.replaced]);
    }
    return { number, etag, bytes: file.bytes };
  }

  async complete(p: Principal, id: string, named: Array<{ number: number; etag: string }>): Promise<UploadJson> {
    const before = await this.live(p, id);
    if (before.status === 'completed') return this.show(p, id); // a retried complete
    const u = await claimForCompletion(this.sql, p.accountId, id);
    if (!u) {
      const now = await this.live(p, id);
      if (now.status === 'completed') return this.show(p, id);
      throw new ApiError('upload_not_completed', `Upload ${id} is being completed by another request; GET it to see when it is done.`);
    }
    let assembled: string | undefined;
    let kept: Pending | undefined;
    try {
      const parts = await this.checkParts(p, u, named);
      assembled = path.join(this.blobs.tmpDir, `asm_${randomBytes(12).toString('hex')}`);
      let size: number;
      try {
        size = allInPlace(u, parts)
          ? await linkData(this.blobs.pathOf(dataBlob(u)), assembled)
          : await concatFiles(parts.map((x) => this.sourceOf(u, x)), assembled);
      } catch (err) {
        throw storageError(err, 'assembling the upload');
      }
      if (size !== u.bytes) {
        throw new ApiError('conversion_unavailable', `The stored parts add up to ${size} bytes, not the ${u.bytes} recorded; send the parts again.`);
      }
      // Its own name per attempt: an attempt that lost its claim removes only what it wrote.
      const blob = `${u.account_id}/${u.id}.${randomBytes(6).toString('hex')}`;
      kept = await this.blobs.stage(assembled, blob).catch((err: unknown) => { throw storageError(err, 'keeping the upload'); });
      const done = await markCompleted(this.sql, u.id, {
        blob, etag: multipartEtag(parts.map((x) => x.etag)), numbers: parts.map((x) => x.number), ttlMs: UPLOAD_TTL_MS,
      });
      if (!done) throw new ApiError('upload_not_completed', `Upload ${id} was taken over by another request; GET it to see its state.`);
      await this.blobs.place([kept]);
      kept = undefined;
      await rm(this.blobs.pathOf(partsDir(u)), { recursive: true, force: true }).catch(() => {});
      return uploadJson(done, parts);
    } catch (err) {
      if (assembled) await rm(assembled, { force: true });
      if (kept && !isDependencyDown(err)) await this.blobs.discard([kept]).catch(() => {});
      await releaseClaim(this.sql, u.id).catch(() => {});
      throw err;
    }
  }

  /** Where a recorded part's bytes are: its own file, or its region of `data`. */
  private sourceOf(u: UploadRow, part: PartRow): Source {
    if (part.blob !== dataBlob(u)) return { path: this.blobs.pathOf(part.blob) };
    return { path: this.blobs.pathOf(part.blob), offset: regionOf(u, part.number)!.offset, bytes: part.bytes };
  }

  /** The named parts, in order, as received; or the 409 / 413 the list deserves. */
  private async checkParts(p: Principal, u: UploadRow, named: Array<{ number: number; etag: string }>) {
    const have = new Map((await listParts(this.sql, u.id)).map((x) => [x.number, x]));
    const parts = [...named].sort((a, b) => a.number - b.number).map((n) => {
      const got = have.get(n.number);
      if (!got) throw new ApiError('upload_not_completed', `Part ${n.number} has not been received.`);
      if (bareEtag(got.etag) !== bareEtag(n.etag)) {
        throw new ApiError('upload_not_completed', `Part ${n.number} has etag ${got.etag}, not ${n.etag}: send it again.`);
      }
      return got;
    });
    const total = parts.reduce((a, x) => a + x.bytes, 0);
    const limit = this.settings.fileBytesOf(p);
    if (total > u.bytes) throw new ApiError('upload_too_large', `The parts add up to ${total} bytes, more than the ${u.bytes} declared.`);
    if (total > limit) throw new ApiError('upload_too_large', `${total} bytes is over the ${p.plan} plan's per-file size of ${limit} bytes.`);
    if (total < u.bytes) {
      const missing = u.part_count > parts.length ? ` (${parts.length} of about ${u.part_count} parts named)` : '';
      throw new ApiError('upload_not_completed', `The parts add up to ${total} bytes, less than the ${u.bytes} declared${missing}.`);
    }
    return parts;
  }
}

/** A part's claimed region of the upload's `data` file. */
export interface Slot {
  path: string;
  offset: number;
  bytes: number;
  release(): Promise<void>;
}

function partsDir(u: UploadRow): string {
  return `${u.account_id}/${u.id}.parts`;
}

function dataBlob(u: UploadRow): string {
  return `${partsDir(u)}/data`;
}

/** Where part `number` lies in the upload's layout (part n at (n − 1) × part_size, part_size
 *  bytes, the last one the rest), or undefined past its last part. */
export function regionOf(u: { bytes: number; part_size: number; part_count: number }, number: number): { offset: number; bytes: number } | undefined {
  if (number < 1 || number > u.part_count) return undefined;
  const offset = (number - 1) * u.part_size;
  return { offset, bytes: number < u.part_count ? u.part_size : u.bytes - offset };
}

/** True when the named parts are every part of the layout, each written in its slot. */
function allInPlace(u: UploadRow, parts: PartRow[]): boolean {
  return parts.length === u.part_count
    && parts.every((x, i) => x.number === i + 1 && x.blob === dataBlob(u) && x.bytes === regionOf(u, x.number)?.bytes);
}

/** A second name for the `data` file (no copy); its size, which the caller checks against the upload's. */
async function linkData(data: string, target: string): Promise<number> {
  await link(data, target);
  return (await stat(target)).size;
}

function expired(id: string): ApiError {
  return new ApiError('file_expired', `Upload ${id} has expired; uploads are kept 24 h.`);
}

function refuseIfNotPending(id: string, status: string): void {
  if (status === 'completing') throw new ApiError('upload_not_completed', `Upload ${id} is being assembled; its parts can no longer change.`);
  if (status === 'completed') throw new ApiError('invalid_request', `Upload ${id} is completed; its parts can no longer change.`);
}
