// Conversions and their files: rows in Postgres, rendered here into the API's Conversion shape.
// Status roll-up lives in SQL so that it is computed from the files in the same statement that
// changes them: `summary`, `status` and `completed_at` can never disagree with the files.
import { atOnce, firstFailure, pipelined, textColumn, type ColumnValue, type Sql } from './db.js';
import { ApiError, isDependencyDown, type Problem } from '../errors.js';

export type ConversionStatus = 'queued' | 'running' | 'completed' | 'completed_with_errors' | 'failed';
export type FileStatus = 'queued' | 'running' | 'completed' | 'failed';

const TERMINAL: ReadonlySet<ConversionStatus> = new Set(['completed', 'completed_with_errors', 'failed']);

/** A conversion in this status is finished: it changes no more. */
export function isTerminal(status: ConversionStatus): boolean {
  return TERMINAL.has(status);
}

export interface NewConversion {
  id: string;
  accountId: string;
  name: string;
  /** The endpoint segment it was submitted to (pdf, markdown/html …): what its jobs run as. */
  endpoint: string;
  operation: 'parse' | 'render';
  options: Record<string, unknown>;
  metadata: unknown;
  store: boolean;
  createdAt: Date;
  expiresAt: Date | null;
  creditsReserved: number;
}

export interface NewFile {
  id: string;
  position: number;
  role: 'source' | 'output';
  sourceId?: string;
  name: string;
  mime: string;
  status?: FileStatus;
  format?: string;
  variant?: string;
  bytes: number | null;
  pages?: number | null;
  credits?: number | null;
  content?: string | null;
  blob?: string | null;
  /** An output kept in `blob` but small enough to be shown inline: its content, for an answer
   *  built from the rows as written (never written to the row itself). */
  shown?: string | null;
  error?: Problem | null;
  /** A URL source fetched at admission: the final address and the kind it converts as. */
  fetched?: { url: string; kind: string } | null;
}

export async function insertConversion(sql: Sql, c: NewConversion, files: NewFile[]): Promise<void> {
  await sql.begin(async (tx) => {
    const t = tx as unknown as Sql;
    // The account kept until the commit, as a foreign key would (migration 0016).
    if ((await lockAccounts(t, [c.accountId])).size === 0) throw accountGone();
    await insertConversions(t, [{
      id: c.id, account_id: c.accountId, name: c.name, endpoint: c.endpoint, operation: c.operation, status: 'queued',
      async_reason: null, options: c.options, metadata: c.metadata ?? null, store: c.store, credits_reserved: c.creditsReserved,
      credits_charged: 0, created_at: c.createdAt, completed_at: null, expires_at: c.expiresAt,
    }]);
    if (files.length > 0) await insertFiles(t, files.map((file) => ({ conv: c, file })));
  });
}

/**
 * Locks the accounts that exist among `ids` until the transaction ends (FOR KEY SHARE, the lock a
 * foreign key's check takes: an account cannot be deleted under the conversions being inserted
 * for it) and returns them. Conversions have no foreign key on their account (migration 0016):
 * whoever inserts them locks their accounts first, with this or, in the group commit's batch sent
 * at once, with the same lock in its check.
 */
export async function lockAccounts(t: Sql, ids: string[]): Promise<Set<string>> {
  const rows = await t`select id from accounts where id = any(${t.array(ids)}::text[]) order by id for key share`;
  return new Set(rows.map((r) => r.id as string));
}

/** A request's account deleted before its conversion was stored (its key's principal was cached). */
export function accountGone(): ApiError {
  return new ApiError('unauthorized', 'The account of this API key no longer exists.');
}

/**
 * Inserts conversion rows (at least one), one array a column (textColumn); the caller has
 * locked their accounts (lockAccounts, or the group commit's check of a batch sent at once).
 *
 * The columns are unnested in the select list, not in FROM: `unnest` in FROM is a table
 * function, whose rows Postgres first copies whole into a tuple store and then reads back, where
 * set-returning functions in the select list run side by side, a row at a time, each array
 * yielding its next element (in step, as long as the longest, as the many-argument `unnest`
 * does). Inserts of 30 rows of a file's shape with a 1 KB content cost a backend 0.78–0.85 ms of
 * CPU against 1.08–1.20 ms through FROM (four alternating rounds of 400 statements). The inserts
 * of a batch's rows are written so (conversions, files, ledger reserves, jobs, key claims); the
 * group commit's monthly counters, a row an account, still read their arrays in FROM.
 */
export function insertConversions(t: Sql, rows: ConversionRow[]) {
  const c = (k: keyof ConversionRow) => textColumn(rows, (r) => r[k] as ColumnValue);
  return t`insert into conversions (id, account_id, name, endpoint, operation, status, async_reason, options, metadata, store,
      credits_reserved, credits_charged, created_at, completed_at, expires_at)
    select unnest(${c('id')}::text[]), unnest(${c('account_id')}::text[]), unnest(${c('name')}::text[]), unnest(${c('endpoint')}::text[]),
      unnest(${c('operation')}::text[]), unnest(${c('status')}::text[]), unnest(${c('async_reason')}::text[]),
      unnest(${c('options')}::jsonb[]), unnest(${c('metadata')}::jsonb[]), unnest(${c('store')}::bool[]),
      unnest(${c('credits_reserved')}::int[]), unnest(${c('credits_charged')}::int[]), unnest(${c('created_at')}::timestamptz[]),
      unnest(${c('completed_at')}::timestamptz[]), unnest(${c('expires_at')}::timestamptz[])`;
}

/** A file row to insert, with what it takes from its conversion. */
export interface FileOfConversion {
  conv: { id: string; accountId: string; expiresAt: Date | null };
  file: NewFile;
}

/**
 * Inserts file rows (at least one), one array a column (textColumn), but for their contents: each
 * content is a parameter of its own, gathered by an ARRAY constructor. Postgres reads an array
 * literal a character at a time, quotes and escapes included (array_in was a sixth of its time
 * under scenario A's load), and contents are most of a file row's bytes; a content parameter is
 * only copied, and the event loop does not escape it. A batch of 30 of A's renders (conversions
 * and files, sent at once) cost Postgres 2.13 ms against 2.31 with contents in an array literal
 * (four alternating rounds of 300 batches). The constructor has a place for a power of two of
 * rows (at least CONTENT_SLOTS_MIN): a few statement texts, each prepared once per connection;
 * the places past the rows unnest with no id, and are left out.
 */
export function insertFiles(sql: Sql, rows: FileOfConversion[]) {
  let slots = CONTENT_SLOTS_MIN;
  while (slots < rows.length) slots *= 2;
  const c = (value: (x: FileOfConversion) => ColumnValue) => textColumn(rows, value);
  const params: Array<string | null> = [
    c((x) => x.file.id), c((x) => x.conv.id), c((x) => x.conv.accountId), c((x) => x.file.position), c((x) => x.file.role),
    c((x) => x.file.sourceId), c((x) => x.file.name), c((x) => x.file.mime), c((x) => x.file.status), c((x) => x.file.format),
    c((x) => x.file.variant), c((x) => x.file.bytes), c((x) => x.file.pages), c((x) => x.file.credits), c((x) => x.file.blob),
    c((x) => x.file.error), c((x) => x.conv.expiresAt), c((x) => x.file.fetched?.url), c((x) => x.file.fetched?.kind),
  ];
  for (let i = 0; i < slots; i++) params.push(i < rows.length ? rows[i]!.file.content ?? null : null);
  return sql.unsafe(filesInsert(slots), params, { prepare: true });
}

/** The fewest content places of a files insert (filesInsert). */
const CONTENT_SLOTS_MIN = 8;

/** The files insert with `slots` content places, by `slots`. */
const FILES_INSERTS = new Map<number, string>();

function filesInsert(slots: number): string {
  let text = FILES_INSERTS.get(slots);
  if (text) return text;
  const contents = Array.from({ length: slots }, (_, i) => `$${20 + i}::text`).join(',');
  text = `insert into files (id, conversion_id, account_id, position, role, source_id, name, mime, status, format, variant,
      bytes, pages, credits, blob, error, expires_at, fetched_from, fetched_kind, content)
    select * from (select unnest($1::text[]) as id, unnest($2::text[]), unnest($3::text[]), unnest($4::int[]), unnest($5::text[]),
      unnest($6::text[]), unnest($7::text[]), unnest($8::text[]), unnest($9::text[]), unnest($10::text[]), unnest($11::text[]),
      unnest($12::bigint[]), unnest($13::int[]), unnest($14::int[]), unnest($15::text[]), unnest($16::jsonb[]),
      unnest($17::timestamptz[]), unnest($18::text[]), unnest($19::text[]), unnest(array[${contents}]::text[])) as f
    where f.id is not null`;
  FILES_INSERTS.set(slots, text);
  return text;
}

/**
 * Marks a source and its conversion running and reads what converting it needs, in one
 * transaction sent whole (one round trip; see db.ts `atOnce`). Undefined when the source is gone
 * (its conversion deleted).
 */
export async function startSource(sql: Sql, conversionId: string, sourceId: string): Promise<StartedSource | undefined> {
  // The conversion's row before its files', as a delete (conversions, cascading to files) and
  // recordSourceOutcome take them; the other order deadlocked. When the conversion is running
  // already (a second source) no row is locked here, and nothing is asked of it after the file.
  // The marks are committed without waiting for the disk: lost in a crash of the database, the
  // conversion reads queued again, as its job (claimed in a durable commit before) is run again;
  // the outcome's commit waits for the disk, and with it for everything written before it.
  const [, , rows] = await atOnce(sql, (t) => [
    t`update conversions set status = 'running' where id = ${conversionId} and status = 'queued'`.execute(),
    t`update files set status = 'running' where id = ${sourceId} and status = 'queued'`.execute(),
    t`select f.id as source_id, f.name, f.mime, f.blob, f.position, f.credits, f.fetched_from, f.fetched_kind,
             c.id, c.account_id, coalesce(c.endpoint, c.name) as endpoint, c.options, c.operation, c.expires_at
      from files f join conversions c on c.id = f.conversion_id where f.id = ${sourceId}`.execute(),
  ], { waitForDisk: false });
  return (rows as StartedSource[])[0];
}

/** A source as a job converts it, with its conversion's settings. */
export interface StartedSource {
  source_id: string;
  name: string;
  mime: string;
  blob: string | null;
  position: number;
  credits: number | null;
  fetched_from: string | null;
  fetched_kind: string | null;
  id: string;
  account_id: string;
  endpoint: string;
  options: unknown;
  operation: string;
  expires_at: Date | null;
}

/**
 * Records the outcome of one source (its outputs, or its error) and rolls the conversion up.
 * Returns the conversion as the change left it (status, completion time, credits charged), or
 * null when `guard` refused the change or the conversion is gone (nothing is then committed).
 * `onTerminal` runs in the same transaction when this change ends the conversion, with the
 * credits its completed sources cost: the credits are settled with the status that ends it, so
 * no reader ever sees a finished conversion whose credits are still reserved (and, from the jobs,
 * its webhook event is enqueued: jobs/finish.ts).
 */
export async function recordSourceOutcome(sql: Sql, ...args: Recording): Promise<RolledUp | null> {
  return pipelined(sql, (t) => recordInTransaction(t, ...args), (rolled) => rolled !== null);
}

/** What recordSourceOutcome and recordInTransaction are told. */
type Recording = [
  conv: { id: string; accountId: string; expiresAt: Date | null },
  sourceId: string,
  outcome: { outputs: NewFile[]; pages: number | null; credits: number } | { error: Problem },
  guard?: (tx: Sql) => Promise<boolean>,
  onTerminal?: (tx: Sql, charged: number, status: ConversionStatus) => Promise<void>,
];

/**
 * recordSourceOutcome's statements, in a transaction the caller holds (a conversion settled in
 * its insert). They are sent together and run in the order written: the guard, the lock, the
 * writes and the roll-up; the writes are sent before the guard's answer, so a refusal (null)
 * leaves them in the transaction for the caller to roll back.
 */
export async function recordInTransaction(t: Sql, ...[conv, sourceId, outcome, guard, onTerminal]: Recording): Promise<RolledUp | null> {
  // A job's outcome counts only while its process still holds the job (see jobs/queue.ts).
  const guarded = guard ? guard(t) : Promise.resolve(true);
  // Locked first: concurrent finishes of one conversion's sources roll up one after the other,
  // each seeing the other's files, and exactly one of them sees completed_at go from unset to set.
  const locked = t`select completed_at from conversions where id = ${conv.id} for update`.execute();
  const writes = 'error' in outcome
    ? [t`update files set status = 'failed', error = ${t.json(outcome.error as never)}, credits = 0
         where id = ${sourceId}`.execute()]
    // sent at once (execute): a statement issued after it runs after it
    : [...(outcome.outputs.length > 0 ? [insertFiles(t, outcome.outputs.map((file) => ({ conv, file }))).execute()] : []),
      t`update files set status = 'completed', pages = ${outcome.pages}, credits = ${outcome.credits}
        where id = ${sourceId}`.execute()];
  const sent = [guarded, locked, rollUp(t, conv.id), ...writes];
  // A closed connection fails it at once (statements held back behind it are never answered).
  const failure = await firstFailure(sent);
  if (isDependencyDown(failure)) throw failure;
  // Refused, what followed the guard may have failed too (the job's conversion deleted: its
  // roll-up found no row): that is the refusal, not an error.
  const [held, ...rest] = await Promise.allSettled(sent);
  if (held.status === 'rejected') throw held.reason;
  if (!held.value) return null;
  // The conversion deleted before its row could be locked: the outputs written for it (files
  // have no foreign key on their conversion, migration 0015) are rolled back with the refusal.
  const lock = rest[0] as PromiseSettledResult<Array<{ completed_at?: Date | null }>>;
  if (lock.status === 'fulfilled' && lock.value.length === 0) return null;
  const failed = rest.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  const [before] = (lock as PromiseFulfilledResult<Array<{ completed_at?: Date | null }>>).value;
  const rolled = (rest[1] as PromiseFulfilledResult<RolledUp>).value;
  if (before!.completed_at === null && isTerminal(rolled.status)) {
    await onTerminal?.(t, rolled.charged, rolled.status);
  }
  return rolled;
}

/** A conversion's status, completion time and credits charged, as a roll-up wrote them. */
export interface RolledUp {
  status: ConversionStatus;
  completedAt: Date | null;
  charged: number;
}

/** Derives the conversion's status from its sources; sets completed_at when all are done. Sent
 *  at once (execute): it sees what the statements issued before it wrote. */
export async function rollUp(sql: Sql, conversionId: string): Promise<RolledUp> {
  const [row] = await sql`
    with s as (
      select count(*) filter (where status = 'completed') as done,
             count(*) filter (where status = 'failed') as failed,
             count(*) filter (where status in ('queued', 'running')) as pending,
             count(*) filter (where status = 'running') as running,
             coalesce(sum(credits) filter (where status = 'completed'), 0) as charged
      from files where conversion_id = ${conversionId} and role = 'source')
    update conversions c set
      status = case
        when s.pending > 0 then (case when s.running > 0 or s.done + s.failed > 0 then 'running' else c.status end)
        when s.failed = 0 then 'completed'
        when s.done = 0 then 'failed'
        else 'completed_with_errors' end,
      completed_at = case when s.pending = 0 then coalesce(c.completed_at, now()) else null end,
      credits_charged = s.charged
    from s where c.id = ${conversionId}
    returning c.status, c.credits_charged, c.completed_at`.execute();
  return { status: row!.status as ConversionStatus, charged: Number(row!.credits_charged), completedAt: row!.completed_at as Date | null };
}

export interface ConversionRow {
  id: string;
  account_id: string;
  name: string;
  endpoint?: string | null;
  operation: string;
  status: ConversionStatus;
  async_reason: string | null;
  options: Record<string, unknown>;
  metadata: unknown;
  store: boolean;
  credits_reserved: number;
  credits_charged: number;
  created_at: Date;
  completed_at: Date | null;
  expires_at: Date | null;
}

export async function getConversionRow(sql: Sql, accountId: string, id: string): Promise<ConversionRow | undefined> {
  const [row] = await sql`select * from conversions where id = ${id} and account_id = ${accountId}`;
  return row as ConversionRow | undefined;
}

export async function setAsyncReason(sql: Sql, id: string, reason: string): Promise<void> {
  await sql`update conversions set async_reason = ${reason} where id = ${id}`;
}

export interface FileRow {
  id: string;
  conversion_id: string;
  position: number;
  role: 'source' | 'output';
  source_id: string | null;
  name: string;
  mime: string;
  status: FileStatus | null;
  format: string | null;
  variant: string | null;
  bytes: string | number | null;
  pages: number | null;
  credits: number | null;
  content: string | null;
  blob: string | null;
  error: Problem | null;
  /** Pages done / total of a source still being converted (from its job). */
  progress_done?: number | null;
  progress_total?: number | null;
}

export const FILES_PAGE = 100;

/** A conversion with a page of its files and its sources' counts, as one snapshot saw them. */
export interface ConversionSnapshot {
  row: ConversionRow;
  /** Up to FILES_PAGE + 1 files after the page's position (one more says there are more). */
  files: FileRow[];
  counts: Record<FileStatus, number>;
}

export interface FilesWanted {
  /** Files after this position (-1: from the first). */
  after: number;
  withContent: boolean;
}

/**
 * Reads a conversion, a page of its files and its sources' counts in one snapshot (a repeatable
 * read transaction): a source that finishes between the reads is seen by all of them or by none,
 * so the summary and status shown always agree with the files shown beside them.
 */
export async function readConversion(sql: Sql, accountId: string, id: string, wanted: FilesWanted): Promise<ConversionSnapshot | undefined> {
  return snapshotRead(sql, async (tx) => {
    const [row] = await tx`select * from conversions where id = ${id} and account_id = ${accountId}`;
    if (!row) return undefined;
    return conversionParts(tx, row as ConversionRow, wanted);
  });
}

/** A page of the account's conversions (see listConversionRows), each with its first page of
 *  files (without contents) and its counts, all in one snapshot (see readConversion). */
export async function readConversions(sql: Sql, accountId: string, limit: number, after?: { createdAt: Date; id: string })
  : Promise<ConversionSnapshot[]> {
  return snapshotRead(sql, async (tx) => {
    const rows = await listConversionRows(tx, accountId, limit, after);
    const counts = await sourceCounts(tx, rows.map((r) => r.id));
    const pages = await Promise.all(rows.map((r) => filesPage(tx, r.id, -1, false)));
    return rows.map((row, i) => ({ row, files: pages[i]!, counts: counts.get(row.id) ?? noCounts() }));
  });
}

/** The files and counts of a conversion row already read with `sql` (inside the caller's
 *  transaction when it must agree with the row). */
export async function conversionParts(sql: Sql, row: ConversionRow, wanted: FilesWanted): Promise<ConversionSnapshot> {
  const [files, counts] = await Promise.all([
    filesPage(sql, row.id, wanted.after, wanted.withContent),
    sourceCounts(sql, [row.id]),
  ]);
  return { row, files, counts: counts.get(row.id) ?? noCounts() };
}

/** `read` in a read-only repeatable read transaction: every statement sees the same snapshot. */
export function snapshotRead<T>(sql: Sql, read: (tx: Sql) => Promise<T>): Promise<T> {
  return sql.begin('isolation level repeatable read read only', (tx) => read(tx as unknown as Sql)) as Promise<T>;
}

function noCounts(): Record<FileStatus, number> {
  return { queued: 0, running: 0, completed: 0, failed: 0 };
}

/** Files of a conversion in order, FILES_PAGE at a time after the `after` position. */
export async function filesPage(sql: Sql, conversionId: string, after: number, withContent: boolean): Promise<FileRow[]> {
  const rows = withContent
    ? await sql`select f.*, j.progress_done, j.progress_total from files f
                left join jobs j on j.source_id = f.id and f.status in ('queued', 'running')
                where f.conversion_id = ${conversionId} and f.position > ${after}
                order by f.position limit ${FILES_PAGE + 1}`
    : await sql`select f.id, f.conversion_id, f.position, f.role, f.source_id, f.name, f.mime, f.status, f.format,
                  f.variant, f.bytes, f.pages, f.credits, null as content, f.blob, f.error, j.progress_done, j.progress_total
                from files f left join jobs j on j.source_id = f.id and f.status in ('queued', 'running')
                where f.conversion_id = ${conversionId} and f.position > ${after}
                order by f.position limit ${FILES_PAGE + 1}`;
  return rows as unknown as FileRow[];
}

export async function getFileRow(sql: Sql, accountId: string, conversionId: string, fileId: string): Promise<FileRow | undefined> {
  const [row] = await sql`select * from files where id = ${fileId} and conversion_id = ${conversionId}
                          and account_id = ${accountId}`;
  return row as FileRow | undefined;
}

async function sourceCounts(sql: Sql, conversionIds: string[]): Promise<Map<string, Record<FileStatus, number>>> {
  const out = new Map<string, Record<FileStatus, number>>();
  if (conversionIds.length === 0) return out;
  const rows = await sql`select conversion_id, status, count(*)::int as n from files
                         where conversion_id in ${sql(conversionIds)} and role = 'source'
                         group by conversion_id, status`;
  for (const r of rows) {
    const m = out.get(r.conversion_id as string) ?? noCounts();
    m[r.status as FileStatus] = r.n as number;
    out.set(r.conversion_id as string, m);
  }
  return out;
}

/** Newest first (created_at desc, id desc), `limit` rows after the cursor's position. */
export async function listConversionRows(
  sql: Sql, accountId: string, limit: number, after?: { createdAt: Date; id: string },
): Promise<ConversionRow[]> {
  const rows = after
    ? await sql`select * from conversions where account_id = ${accountId}
                and (created_at, id) < (${after.createdAt}, ${after.id})
                order by created_at desc, id desc limit ${limit}`
    : await sql`select * from conversions where account_id = ${accountId}
                order by created_at desc, id desc limit ${limit}`;
  return rows as unknown as ConversionRow[];
}

/** Deletes a conversion and its files' rows; returns the blobs to remove, or undefined. */
export async function deleteConversionRows(sql: Sql, accountId: string, id: string): Promise<string[] | undefined> {
  return sql.begin(async (tx) => {
    const blobs = await tx`select blob from files where conversion_id = ${id} and account_id = ${accountId} and blob is not null`;
    const gone = await tx`delete from conversions where id = ${id} and account_id = ${accountId} returning id`;
    if (gone.length === 0) return undefined;
    return blobs.map((b) => b.blob as string);
  });
}
