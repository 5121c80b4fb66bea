// Rows of chunked uploads and their parts (migration 0003), and the Upload object the API shows.
// Every query is scoped by account: another account's upload is indistinguishable from none.
import type { Sql } from '../store/db.js';

export type UploadStatus = 'pending' | 'completing' | 'completed';

export interface UploadRow {
  id: string;
  account_id: string;
  name: string;
  bytes: number;
  part_size: number;
  part_count: number;
  status: UploadStatus;
  blob: string | null;
  etag: string | null;
  created_at: Date;
  completed_at: Date | null;
  expires_at: Date;
  /** expires_at has passed, by the database's clock. */
  expired: boolean;
}

export interface PartRow {
  number: number;
  etag: string;
  bytes: number;
  blob: string;
}

export interface UploadJson {
  id: string;
  object: 'upload';
  status: UploadStatus;
  name: string;
  bytes: number;
  part_size: number;
  part_count: number;
  etag: string | null;
  created_at: string;
  completed_at: string | null;
  expires_at: string;
  parts: Array<{ number: number; etag: string; bytes: number }>;
}

function toUpload(r: Record<string, unknown>): UploadRow {
  return {
    ...(r as unknown as UploadRow),
    bytes: Number(r.bytes),
    part_size: Number(r.part_size),
  };
}

function toPart(r: Record<string, unknown>): PartRow {
  return { number: r.number as number, etag: r.etag as string, bytes: Number(r.bytes), blob: r.blob as string };
}

export function uploadJson(u: UploadRow, parts: PartRow[]): UploadJson {
  return {
    id: u.id,
    object: 'upload',
    status: u.status,
    name: u.name,
    bytes: u.bytes,
    part_size: u.part_size,
    part_count: u.part_count,
    etag: u.etag,
    created_at: u.created_at.toISOString(),
    completed_at: u.completed_at ? u.completed_at.toISOString() : null,
    expires_at: u.expires_at.toISOString(),
    parts: parts.map((p) => ({ number: p.number, etag: p.etag, bytes: p.bytes })),
  };
}

export async function insertUpload(sql: Sql, u: {
  id: string; accountId: string; name: string; bytes: number; partSize: number; partCount: number; ttlMs: number;
}): Promise<UploadRow> {
  const [row] = await sql`
    insert into uploads (id, account_id, name, bytes, part_size, part_count, expires_at)
    values (${u.id}, ${u.accountId}, ${u.name}, ${u.bytes}, ${u.partSize}, ${u.partCount},
            now() + ${u.ttlMs} * interval '1 millisecond')
    returning *, false as expired`;
  return toUpload(row!);
}

export async function getUpload(sql: Sql, accountId: string, id: string): Promise<UploadRow | undefined> {
  const [row] = await sql`select *, expires_at <= now() as expired from uploads
                          where id = ${id} and account_id = ${accountId}`;
  return row ? toUpload(row) : undefined;
}

export async function listParts(sql: Sql, uploadId: string): Promise<PartRow[]> {
  const rows = await sql`select number, etag, bytes, blob from upload_parts where upload_id = ${uploadId} order by number`;
  return rows.map(toPart);
}

/** True when the sweeper removed this id of the account because it had expired. */
export async function wasExpired(sql: Sql, accountId: string, id: string): Promise<boolean> {
  const [row] = await sql`select 1 from expired_refs where id = ${id} and account_id = ${accountId}`;
  return row !== undefined;
}

export type PartOutcome =
  | { ok: true; replaced?: string }
  | { ok: false; why: 'gone' | 'expired' | 'not_pending'; status?: UploadStatus };

/**
 * Records a part whose bytes are already at `blob`. The upload row is locked for the swap so
 * that a part cannot land after completion claimed the upload. Returns the blob it replaced.
 */
export async function recordPart(sql: Sql, accountId: string, uploadId: string, part: PartRow): Promise<PartOutcome> {
  return sql.begin(async (tx) => {
    const t = tx as unknown as Sql;
    const [u] = await t`select status, expires_at <= now() as expired from uploads
                        where id = ${uploadId} and account_id = ${accountId} for update`;
    if (!u) return { ok: false, why: 'gone' } as const;
    if (u.expired) return { ok: false, why: 'expired' } as const;
    if (u.status !== 'pending') return { ok: false, why: 'not_pending', status: u.status as UploadStatus } as const;
    const [old] = await t`select blob from upload_parts where upload_id = ${uploadId} and number = ${part.number}`;
    await t`insert into upload_parts (upload_id, number, etag, bytes, blob)
            values (${uploadId}, ${part.number}, ${part.etag}, ${part.bytes}, ${part.blob})
            on conflict (upload_id, number) do update
              set etag = excluded.etag, bytes = excluded.bytes, blob = excluded.blob, received_at = now()`;
    return { ok: true, replaced: old ? old.blob as string : undefined } as const;
  });
}

/** Claims the region of part `number` in the upload's file (migration 0010); false when taken. */
export async function claimPartSlot(sql: Sql, uploadId: string, number: number): Promise<boolean> {
  const rows = await sql`insert into upload_slots (upload_id, number) values (${uploadId}, ${number})
                         on conflict do nothing returning number`;
  return rows.length === 1;
}

/**
 * Gives the region of part `number` back. When no claim is left on the upload (no part recorded
 * in its place, no other request writing one), `unclaimed` runs before the commit, under the
 * upload row's lock: no request can claim a region meanwhile.
 */
export async function releasePartSlot(sql: Sql, uploadId: string, number: number, unclaimed: () => Promise<void>): Promise<void> {
  await sql.begin(async (tx) => {
    const t = tx as unknown as Sql;
    await t`select 1 from uploads where id = ${uploadId} for update`;
    await t`delete from upload_slots where upload_id = ${uploadId} and number = ${number}`;
    const [left] = await t`select 1 from upload_slots where upload_id = ${uploadId} limit 1`;
    if (!left) await unclaimed();
  });
}

/** How long an assembling request holds its claim before another may take the upload over. */
export const CLAIM_MS = 10 * 60 * 1000;

/** Claims a pending (or abandoned completing) upload for assembly; undefined when not claimable. */
export async function claimForCompletion(sql: Sql, accountId: string, id: string): Promise<UploadRow | undefined> {
  const [row] = await sql`
    update uploads set status = 'completing', locked_until = now() + ${CLAIM_MS} * interval '1 millisecond'
    where id = ${id} and account_id = ${accountId} and expires_at > now()
      and (status = 'pending' or (status = 'completing' and locked_until < now()))
    returning *, false as expired`;
  return row ? toUpload(row) : undefined;
}

/** Gives a claimed upload back (assembly refused or failed): the client may fix it and retry. */
export async function releaseClaim(sql: Sql, id: string): Promise<void> {
  await sql`update uploads set status = 'pending', locked_until = null where id = ${id} and status = 'completing'`;
}

/**
 * Marks a claimed upload completed with its assembled blob; drops the rows of parts that were
 * received but not named. A completed upload is kept `ttlMs` from now, so it can be referenced.
 * Returns the completed row, or undefined if the claim was lost. The part files are the caller's to remove.
 */
export async function markCompleted(sql: Sql, id: string, done: { blob: string; etag: string; numbers: number[]; ttlMs: number }): Promise<UploadRow | undefined> {
  return sql.begin(async (tx) => {
    const t = tx as unknown as Sql;
    const [row] = await t`
      update uploads set status = 'completed', locked_until = null, blob = ${done.blob}, etag = ${done.etag},
        completed_at = now(), expires_at = now() + ${done.ttlMs} * interval '1 millisecond'
      where id = ${id} and status = 'completing'
      returning *, false as expired`;
    if (!row) return undefined;
    await t`delete from upload_parts where upload_id = ${id} and number not in ${t(done.numbers)}`;
    return toUpload(row);
  });
}
