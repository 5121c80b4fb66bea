// The Conversion and File objects exactly as the API shows them (spec: "Resources and their
// fields"), built from rows read in one snapshot (store/conversions.ts readConversion), so that
// `summary` and `status` agree with the files beside them. Lists leave file contents out; GET of
// one conversion includes them. Every representation shows the balance (`credits_remaining`) the
// same way: the caller reads it and passes it in. It lives beside the rows it is built from, so
// that the server's answers and the webhooks' events (webhooks/outbox.ts) share it.
import {
  FILES_PAGE, type ConversionRow, type ConversionSnapshot, type FileRow, type FileStatus,
} from './conversions.js';
import { encodeCursor } from './cursor.js';

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
  /** credits_remaining: the account's balance when the answer was made, in every representation. */
  usage: { credits_reserved: number; credits_charged: number; credits_remaining: number };
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

/** A conversion as read in one snapshot, with the account's balance. */
export function conversionJson(snap: ConversionSnapshot, balance: number): ConversionJson {
  return build(snap.row, snap.files, snap.counts, balance);
}

/** A page of the listing, read in one snapshot. */
export function conversionsJson(snaps: ConversionSnapshot[], balance: number): ConversionJson[] {
  return snaps.map((s) => conversionJson(s, balance));
}

/** A conversion whose rows are all in hand (fewer than a page of files): no query. */
export function snapshotJson(row: ConversionRow, files: FileRow[], balance: number): ConversionJson {
  const counts: Record<FileStatus, number> = { queued: 0, running: 0, completed: 0, failed: 0 };
  for (const f of files) if (f.role === 'source' && f.status) counts[f.status]++;
  return build(row, files, counts, balance);
}

function build(row: ConversionRow, page: FileRow[], counts: Record<FileStatus, number>, balance: number): ConversionJson {
  const more = page.length > FILES_PAGE;
  const files = more ? page.slice(0, FILES_PAGE) : page;
  const out = files.map((f) => fileJson(row.id, f));
  const bySource = new Map<string, FileJson>();
  for (const f of out) if (f.role === 'source') { f.outputs = []; bySource.set(f.id, f); }
  files.forEach((f, i) => {
    if (f.role === 'output' && f.source_id) bySource.get(f.source_id)?.outputs?.push({ id: out[i]!.id, format: f.format });
  });
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
    summary: { sources: counts.queued + counts.running + counts.completed + counts.failed, ...counts },
    usage: { credits_reserved: row.credits_reserved, credits_charged: row.credits_charged, credits_remaining: balance },
  };
}
