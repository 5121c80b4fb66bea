// Group commit for conversions that are finished before they are stored (Markdown renders done in
// the request). Each one alone would be a transaction of its own that also updates its account's
// monthly counter row, and that row lock makes every submit of an account wait for the commit
// before it: the cheap path ran one commit at a time. Here the requests that arrive while a
// commit is in flight wait together and go in the next one: one transaction inserts all their
// conversions and files, counts the month once per account, and queues their webhook events.
//
// The monthly allowance stays exact: the counter rows of the batch's accounts are locked (in
// account order, so two processes' batches never deadlock), each conversion is admitted in
// arrival order while it fits, and the ones that do not are refused with upload_limit_exceeded
// without touching the others. A batch that fails as a whole is retried one conversion per
// transaction, so one bad row cannot fail the requests that happened to share its commit; a
// batch that failed because the database is away fails as a whole, at once.
import { ApiError, isDependencyDown } from '../errors.js';
import type { Sql } from '../store/db.js';
import type { ConversionRow, FileRow, NewFile } from '../store/conversions.js';
import { enqueueConversionEvent, eventTypeOf } from '../webhooks/outbox.js';

/** A conversion in its final state, as it will be stored and answered. */
export interface FinishedConversion {
  row: ConversionRow;
  files: NewFile[];
  /** Source files counted against the month, and the plan's allowance. */
  monthlyFiles: number;
  monthlyLimit: number;
}

interface Waiting {
  item: FinishedConversion;
  resolve(): void;
  reject(err: unknown): void;
}

/** Conversions per transaction: far under Postgres's 65,535 parameters with their files. */
export const MAX_BATCH = 200;

export class GroupCommit {
  private queue: Waiting[] = [];
  private flushing = false;
  /** Transactions committed and conversions in them (for metrics and tests). */
  readonly stats = { batches: 0, conversions: 0 };

  constructor(private sql: Sql) {}

  /** Stores the conversion; resolves once its transaction committed. */
  add(item: FinishedConversion): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          this.settle(batch, await this.commit(batch.map((w) => w.item)));
        } catch (err) {
          // Without a database, one transaction per conversion would fail the same way, one
          // after another: every request of the batch would wait for all the ones before it.
          if (batch.length === 1 || isDependencyDown(err)) {
            for (const w of batch) w.reject(err);
            continue;
          }
          for (const w of batch) {
            try {
              this.settle([w], await this.commit([w.item]));
            } catch (one) {
              w.reject(one);
            }
          }
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private settle(batch: Waiting[], refused: Map<FinishedConversion, ApiError>): void {
    for (const w of batch) {
      const err = refused.get(w.item);
      if (err) w.reject(err);
      else w.resolve();
    }
  }

  /** One transaction for the batch; returns the conversions refused by the monthly allowance. */
  private async commit(items: FinishedConversion[]): Promise<Map<FinishedConversion, ApiError>> {
    const refused = new Map<FinishedConversion, ApiError>();
    await this.sql.begin(async (tx) => {
      const t = tx as unknown as Sql;
      const admitted = await admitMonthly(t, items, refused);
      if (admitted.length === 0) return;
      await t`insert into conversions ${t(admitted.map((c) => conversionValues(t, c.row)))}`;
      const files = admitted.flatMap((c) => c.files.map((f) => fileValues(t, c.row, f)));
      if (files.length > 0) await t`insert into files ${t(files)}`;
      await queueEvents(t, admitted);
      this.stats.batches++;
      this.stats.conversions += admitted.length;
    });
    return refused;
  }
}

const MONTH = 'date_trunc(\'month\', now() at time zone \'utc\')::date';

/** Locks the accounts' counter rows, admits conversions in order while they fit, counts them. */
async function admitMonthly(t: Sql, items: FinishedConversion[], refused: Map<FinishedConversion, ApiError>)
  : Promise<FinishedConversion[]> {
  const accounts = [...new Set(items.map((c) => c.row.account_id))].sort();
  await t`insert into monthly_usage (account_id, month, files)
          select a, ${t.unsafe(MONTH)}, 0 from unnest(${t.array(accounts)}::text[]) as a
          order by a on conflict (account_id, month) do nothing`;
  const rows = await t`select account_id, files from monthly_usage
                       where account_id = any(${t.array(accounts)}::text[]) and month = ${t.unsafe(MONTH)}
                       order by account_id for update`;
  const used = new Map(rows.map((r) => [r.account_id as string, Number(r.files)]));
  const admitted: FinishedConversion[] = [];
  const added = new Map<string, number>();
  for (const c of items) {
    const account = c.row.account_id;
    const before = used.get(account) ?? 0;
    if (before + c.monthlyFiles > c.monthlyLimit) {
      refused.set(c, new ApiError('upload_limit_exceeded',
        `${before} files were submitted this month; ${c.monthlyFiles} more would pass the plan's ${c.monthlyLimit}.`));
      continue;
    }
    used.set(account, before + c.monthlyFiles);
    added.set(account, (added.get(account) ?? 0) + c.monthlyFiles);
    admitted.push(c);
  }
  for (const [account, n] of added) {
    await t`update monthly_usage set files = files + ${n} where account_id = ${account} and month = ${t.unsafe(MONTH)}`;
  }
  return admitted;
}

function conversionValues(t: Sql, r: ConversionRow): Record<string, unknown> {
  return {
    id: r.id, account_id: r.account_id, name: r.name, endpoint: r.endpoint ?? null, operation: r.operation, status: r.status,
    async_reason: r.async_reason, options: t.json(r.options as never),
    metadata: r.metadata === null || r.metadata === undefined ? null : t.json(r.metadata as never),
    store: r.store, credits_reserved: r.credits_reserved, credits_charged: r.credits_charged,
    created_at: r.created_at, completed_at: r.completed_at, expires_at: r.expires_at,
  };
}

function fileValues(t: Sql, r: ConversionRow, f: NewFile): Record<string, unknown> {
  return {
    id: f.id, conversion_id: r.id, account_id: r.account_id, position: f.position, role: f.role,
    source_id: f.sourceId ?? null, name: f.name, mime: f.mime, status: f.status ?? null,
    format: f.format ?? null, variant: f.variant ?? null, bytes: f.bytes, pages: f.pages ?? null,
    credits: f.credits ?? null, content: f.content ?? null, blob: f.blob ?? null,
    error: f.error ? t.json(f.error as never) : null, expires_at: r.expires_at,
  };
}

/** Webhook events for the conversions of accounts that subscribe to their outcome. */
async function queueEvents(t: Sql, admitted: FinishedConversion[]): Promise<void> {
  const accounts = [...new Set(admitted.map((c) => c.row.account_id))];
  const types = [...new Set(admitted.map((c) => eventTypeOf(c.row.status)))];
  const listening = await t`select distinct account_id from webhook_endpoints
    where account_id = any(${t.array(accounts)}::text[]) and status = 'enabled'
      and event_types && ${t.array(types)}::text[]`;
  if (listening.length === 0) return;
  const subscribed = new Set(listening.map((r) => r.account_id as string));
  for (const c of admitted) if (subscribed.has(c.row.account_id)) await enqueueConversionEvent(t, c.row.id);
}

/** The files as the API's read of them would return them, for answering without a query. */
export function fileRowsOf(row: ConversionRow, files: NewFile[]): FileRow[] {
  return files.map((f) => ({
    id: f.id, conversion_id: row.id, position: f.position, role: f.role, source_id: f.sourceId ?? null,
    name: f.name, mime: f.mime, status: f.status ?? null, format: f.format ?? null, variant: f.variant ?? null,
    bytes: f.bytes, pages: f.pages ?? null, credits: f.credits ?? null, content: f.content ?? null,
    blob: f.blob ?? null, error: f.error ?? null,
  })).sort((a, b) => a.position - b.position);
}
