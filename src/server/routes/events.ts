// GET /v1/conversions/{id}/events: Server-Sent Events with the conversion's progress until it
// ends. The stream reads the database, not this process's memory, so it follows work that any
// process runs. Events: `progress` (the status, and per-file status and pages done, read in one
// snapshot) on every change, then one `done` with the final Conversion (without file contents,
// with the balance in `usage.credits_remaining` as GET shows it), then the stream closes.
import { ApiError } from '../../errors.js';
import { requireScope, requireSubscription } from '../auth.js';
import { principalOf, type Deps } from '../deps.js';
import { statusLine, finish, type Ctx } from '../respond.js';
import type { Router } from '../router.js';
import { conversionJson } from '../../store/conversion-json.js';
import { getConversionRow, readConversion, snapshotRead, type ConversionStatus } from '../../store/conversions.js';
import type { Sql } from '../../store/db.js';

const TERMINAL = new Set(['completed', 'completed_with_errors', 'failed']);
export const EVENTS_POLL_MS = 250;
const KEEPALIVE_MS = 15_000;

/** The conversion's status and its sources' progress, in one snapshot; undefined once deleted. */
function progressOf(sql: Sql, accountId: string, conversionId: string) {
  return snapshotRead(sql, async (tx) => {
    const [row] = await tx`select status from conversions where id = ${conversionId} and account_id = ${accountId}`;
    if (!row) return undefined;
    const rows = await tx`
      select f.id, f.name, f.status, coalesce(j.progress_done, 0) as pages_done,
             coalesce(nullif(j.progress_total, 0), f.pages) as pages_total
      from files f left join jobs j on j.source_id = f.id
      where f.conversion_id = ${conversionId} and f.role = 'source' order by f.position`;
    const files = rows.map((r) => ({ id: r.id, name: r.name, status: r.status, pages_done: r.pages_done, pages_total: r.pages_total }));
    return { status: row.status as ConversionStatus, files };
  });
}

function send(ctx: Ctx, event: string, data: unknown): boolean {
  if (ctx.aborted) return false;
  ctx.res.cork(() => { ctx.res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`); });
  return true;
}

export function registerEvents(router: Router, deps: Deps): void {
  router.add('GET', '/v1/conversions/:id/events', async (ctx) => {
    const p = await principalOf(deps, ctx);
    requireScope(p, 'read');
    requireSubscription(p);
    const id = ctx.params.id!;
    if (!(await getConversionRow(deps.db.sql, p.accountId, id))) throw new ApiError('not_found', `No conversion ${id}.`);

    ctx.answered = true;
    ctx.status = 200;
    ctx.res.cork(() => {
      ctx.res.writeStatus(statusLine(200));
      ctx.res.writeHeader('content-type', 'text/event-stream');
      ctx.res.writeHeader('cache-control', 'no-cache');
      ctx.res.writeHeader('x-request-id', ctx.requestId);
      ctx.res.write(': docpipe events\n\n');
    });

    let last = '';
    let lastSent = Date.now();
    try {
      for (;;) {
        if (ctx.aborted) return;
        // The server is stopping: the client reconnects to another one (or to this one restarted).
        if (deps.conversions.isStopping()) break;
        const now = await progressOf(deps.db.sql, p.accountId, id);
        if (!now) {
          send(ctx, 'deleted', { id });
          break;
        }
        const state = JSON.stringify(now);
        if (state !== last) {
          last = state;
          lastSent = Date.now();
          if (!send(ctx, 'progress', { id, ...now })) return;
        } else if (Date.now() - lastSent > KEEPALIVE_MS) {
          lastSent = Date.now();
          if (ctx.aborted) return;
          ctx.res.cork(() => { ctx.res.write(': keep-alive\n\n'); });
        }
        if (TERMINAL.has(now.status)) {
          const snap = await readConversion(deps.db.sql, p.accountId, id, { after: -1, withContent: false });
          if (snap) send(ctx, 'done', conversionJson(snap, await deps.ledger.balance(p.accountId)));
          else send(ctx, 'deleted', { id });
          break;
        }
        await new Promise((r) => setTimeout(r, EVENTS_POLL_MS));
      }
    } catch (err) {
      send(ctx, 'error', { message: (err as Error).message });
    }
    if (!ctx.aborted) ctx.res.cork(() => ctx.res.end());
    finish(ctx);
  });
}
