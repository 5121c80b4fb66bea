// The Conversion and File objects exactly as the API shows them (spec: "Resources and their
// fields"), built from rows. Lists leave file contents out; GET of one conversion includes them.
import type { Sql } from '../store/db.js';
import {
  FILES_PAGE, filesPage, sourceCounts, type ConversionRow, type FileRow, type FileStatus,
} from '../store/conversions.js';

export interface FileJson {
  id: string;
  object: 'file';
  name: string;
  mime: string;
  role: 'source' | 'output';
  status: FileStatus | null;
  /** Outputs only: sources carry neither (the spec's enums have no null). */
  format?: string;
  variant?: string;
  bytes: number | null;
  pages: number | null;
  credits: number | null;
  content: string | null;
  error: unknown;
  links: { content: string };
  outputs?: Array<{ id: string; format: string | null }>;
  /** While a source is queued or running: pages converted so far and the total. */
  progress?: { pages_done: number; pages_total: number | null };
}

export interface ConversionJson {
  id: string;
  object: 'conversion';
  name: string;
  operation: string;
  status: string;
  created_at: string;
  completed_at: string | null;
  async_reason: string | null;
  files: FileJson[];
  files_next_cursor: string | null;
  links: { self: string };
  metadata: unknown;
  summary: { sources: number; queued: number; running: number; completed: number; failed: number };
  usage: { credits_reserved: number; credits_charged: number; credits_remaining: number | null };
}

function fileJson(conversionId: string, f: FileRow): FileJson {
  return {
    id: f.id,
    object: 'file',
    name: f.name,
    mime: f.mime,
    role: f.role,
    status: f.status,
    ...(f.role === 'output' && f.format !== null ? { format: f.format } : {}),
    ...(f.role === 'output' && f.variant !== null ? { variant: f.variant } : {}),
    bytes: f.bytes === null ? null : Number(f.bytes),
    pages: f.pages,
    credits: f.credits,
    // A source's own bytes are downloaded from its link, never shown inline (a small rendered
    // source is kept in its row's content).
    content: f.role === 'source' ? null : f.content,
    error: f.error,
    links: { content: `/v1/conversions/${conversionId}/files/${f.id}/content` },
    ...(f.role === 'source' && (f.status === 'queued' || f.status === 'running')
      ? { progress: { pages_done: f.progress_done ?? 0, pages_total: f.progress_total || f.pages } }
      : {}),
  };
}

/** Cursors are opaque to clients: base64url of what the next page starts after. */
export function encodeCursor(parts: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

export function decodeCursor(cursor: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

export async function conversionJson(
  sql: Sql, row: ConversionRow,
  opts: { withContent: boolean; filesAfter?: number; balance?: number | null },
): Promise<ConversionJson> {
  const [page, counts] = await Promise.all([
    filesPage(sql, row.id, opts.filesAfter ?? -1, opts.withContent),
    sourceCounts(sql, [row.id]),
  ]);
  return build(row, page, counts.get(row.id), opts.balance ?? null);
}

/** A conversion whose rows are all in hand (fewer than a page of files): no query. */
export function snapshotJson(row: ConversionRow, files: FileRow[], balance: number | null): ConversionJson {
  const counts: Record<FileStatus, number> = { queued: 0, running: 0, completed: 0, failed: 0 };
  for (const f of files) if (f.role === 'source' && f.status) counts[f.status]++;
  return build(row, files, counts, balance);
}

export async function conversionsJson(sql: Sql, rows: ConversionRow[]): Promise<ConversionJson[]> {
  const counts = await sourceCounts(sql, rows.map((r) => r.id));
  const pages = await Promise.all(rows.map((r) => filesPage(sql, r.id, -1, false)));
  return rows.map((r, i) => build(r, pages[i]!, counts.get(r.id), null));
}

function build(row: ConversionRow, page: FileRow[], counts: Record<FileStatus, number> | undefined, balance: number | null): ConversionJson {
  const more = page.length > FILES_PAGE;
  const files = more ? page.slice(0, FILES_PAGE) : page;
  const out = files.map((f) => fileJson(row.id, f));
  const bySource = new Map<string, FileJson>();
  for (const f of out) if (f.role === 'source') { f.outputs = []; bySource.set(f.id, f); }
  files.forEach((f, i) => {
    if (f.role === 'output' && f.source_id) bySource.get(f.source_id)?.outputs?.push({ id: out[i]!.id, format: f.format });
  });
  const c = counts ?? { queued: 0, running: 0, completed: 0, failed: 0 };
  return {
    id: row.id,
    object: 'conversion',
    name: row.name,
    operation: row.operation,
    status: row.status,
    created_at: row.created_at.toISOString(),
    completed_at: row.completed_at ? row.completed_at.toISOString() : null,
    async_reason: row.async_reason,
    files: out,
    files_next_cursor: more ? encodeCursor({ p: files[files.length - 1]!.position }) : null,
    links: { self: `/v1/conversions/${row.id}` },
    metadata: row.metadata ?? null,
    summary: { sources: c.queued + c.running + c.completed + c.failed, ...c },
    usage: { credits_reserved: row.credits_reserved, credits_charged: row.credits_charged, credits_remaining: balance },
  };
}
