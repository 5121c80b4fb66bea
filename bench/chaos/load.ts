// The mixed load of the chaos run and of the outage tests: a few workers, each sending its next
// request when the last one answered, to whichever instance is up, until told to stop. The mix:
// the cheap path (Markdown → HTML, rendered in the request), small paid conversions (HTML, text),
// real documents (multipart, waited for or with Prefer: respond-async), Idempotency-Key retries
// (the same request sent again, possibly to another instance) and deletes of earlier
// conversions. Every answer is recorded, so the caller can check what each status promised:
// a 200/202 names a conversion that must end terminal (unless it was deleted), a refusal must be
// a Problem of the kinds the fault allows, and no request may hang.
import { randomBytes } from 'node:crypto';

export type Op = 'markdown' | 'html' | 'text' | 'document' | 'async' | 'idempotent' | 'delete';

export interface Doc {
  endpoint: string;
  name: string;
  type: string;
  data: Buffer;
  fields?: Record<string, string>;
  /** How often it is picked relative to the others (default 1). */
  weight?: number;
}

export interface Account {
  accountId: string;
  key: string;
}

export interface Sent {
  op: Op;
  method: string;
  origin: string;
  accountId: string;
  /** HTTP status; 0 when the connection failed, -1 when the client gave up (a hang). */
  status: number;
  /** The Problem's `error` code, or the network error's message. */
  error?: string;
  retryable?: boolean;
  /** The conversion a submit created or replayed, or the one a delete named. */
  id?: string;
  idempotencyKey?: string;
  replayed?: boolean;
  startedAt: number;
  ms: number;
}

export interface LoadOptions {
  /** The instances accepting requests right now (the load spreads over them). */
  origins: () => string[];
  accounts: Account[];
  docs: Doc[];
  workers: number;
  /** Relative weights; an op left out is not sent. */
  mix: Partial<Record<Op, number>>;
  /** A request that takes longer is recorded as a hang (status -1). */
  timeoutMs: number;
  /** `wait` of waited document submits (seconds). */
  waitS?: number;
  seed?: number;
}

export interface Load {
  sent: Sent[];
  /** Stops sending; resolves when every worker's last request has answered. */
  stop(): Promise<void>;
}

/** A small seeded generator, so a run's sequence of operations can be replayed. */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 2 ** 32;
  };
}

export function startLoad(opts: LoadOptions): Load {
  const rand = rng(opts.seed ?? Date.now());
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const sent: Sent[] = [];
  const accepted = new Map<string, string[]>(); // account -> conversion ids it may delete
  const weights = Object.entries(opts.mix).filter(([, w]) => (w ?? 0) > 0) as Array<[Op, number]>;
  const total = weights.reduce((a, [, w]) => a + w, 0);
  let stopping = false;

  const docWeight = opts.docs.reduce((a, d) => a + (d.weight ?? 1), 0);
  const pickDoc = (): Doc => {
    let x = rand() * docWeight;
    for (const d of opts.docs) { x -= d.weight ?? 1; if (x < 0) return d; }
    return opts.docs[opts.docs.length - 1]!;
  };

  const chooseOp = (): Op => {
    let x = rand() * total;
    for (const [op, w] of weights) { x -= w; if (x < 0) return op; }
    return weights[weights.length - 1]![0];
  };

  const send = async (op: Op, account: Account, method: string, p: string, body?: RequestInit['body'],
    headers: Record<string, string> = {}, origin: string | undefined = pickOrigin()): Promise<Sent> => {
    const rec: Sent = { op, method, origin: origin ?? '', accountId: account.accountId, status: 0, startedAt: Date.now(), ms: 0 };
    sent.push(rec);
    if (!origin) {
      rec.error = 'no instance up';
      return rec;
    }
    try {
      const res = await fetch(origin + p, {
        method, body, headers: { 'x-api-key': account.key, ...headers }, signal: AbortSignal.timeout(opts.timeoutMs),
      });
      rec.status = res.status;
      rec.replayed = res.headers.get('idempotent-replayed') === 'true';
      const text = await res.text();
      const data = text ? JSON.parse(text) as { id?: string; error?: string; retryable?: boolean } : {};
      if (res.status >= 400) {
        rec.error = data.error;
        rec.retryable = data.retryable;
      } else if (data.id) rec.id = data.id;
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      if (e.name === 'TimeoutError') rec.status = -1;
      rec.error = e.cause?.code ?? e.message;
    }
    rec.ms = Date.now() - rec.startedAt;
    return rec;
  };

  function pickOrigin(): string | undefined {
    const up = opts.origins();
    return up.length ? pick(up) : undefined;
  }

  const json = (v: unknown): { body: string; headers: Record<string, string> } =>
    ({ body: JSON.stringify(v), headers: { 'content-type': 'application/json' } });

  const form = (d: Doc): FormData => {
    const f = new FormData();
    for (const [k, v] of Object.entries(d.fields ?? {})) f.append(k, v);
    f.append('file', new Blob([d.data], { type: d.type }), d.name);
    return f;
  };

  const remember = (r: Sent): void => {
    if ((r.status === 200 || r.status === 202) && r.id) {
      const list = accepted.get(r.accountId) ?? [];
      list.push(r.id);
      accepted.set(r.accountId, list);
    }
  };

  const one = async (): Promise<void> => {
    const op = chooseOp();
    const account = pick(opts.accounts);
    const tag = randomBytes(6).toString('hex');
    switch (op) {
      case 'markdown': {
        const j = json({ markdown: `# Note ${tag}\n\nSome *emphasis* and a [link](https://example.com/${tag}).\n` });
        remember(await send(op, account, 'POST', '/v1/convert/markdown/html', j.body, j.headers));
        return;
      }
      case 'html': {
        const j = json({ html: `<h1>Page ${tag}</h1><p>A paragraph with <b>bold</b> text.</p><ul><li>one</li><li>two</li></ul>` });
        remember(await send(op, account, 'POST', '/v1/convert/html', j.body, j.headers));
        return;
      }
      case 'text': {
        const j = json({ text: `Plain text ${tag}\nwith two lines.` });
        remember(await send(op, account, 'POST', '/v1/convert/text', j.body, j.headers));
        return;
      }
      case 'document': {
        const d = pickDoc();
        remember(await send(op, account, 'POST', `/v1/convert/${d.endpoint}?wait=${opts.waitS ?? 10}`, form(d)));
        return;
      }
      case 'async': {
        const d = pickDoc();
        remember(await send(op, account, 'POST', `/v1/convert/${d.endpoint}`, form(d), { prefer: 'respond-async' }));
        return;
      }
      case 'idempotent': {
        // The same request (same bytes, same key) sent up to three times, as a client retrying
        // after a timeout or a 503 would: every 2xx answer must name one conversion.
        const key = `chaos-${tag}`;
        const d = rand() < 0.5 ? pickDoc() : undefined;
        for (let i = 0, n = 1 + Math.floor(rand() * 3); i < n && !stopping; i++) {
          const r = d
            ? await send(op, account, 'POST', `/v1/convert/${d.endpoint}`, form(d), { prefer: 'respond-async', 'idempotency-key': key })
            : await send(op, account, 'POST', '/v1/convert/html', JSON.stringify({ html: `<p>Retried ${tag}</p>` }),
              { 'content-type': 'application/json', 'idempotency-key': key });
          r.idempotencyKey = key;
          remember(r);
        }
        return;
      }
      case 'delete': {
        const list = accepted.get(account.accountId) ?? [];
        if (list.length === 0) return;
        const id = list.splice(Math.floor(rand() * list.length), 1)[0]!;
        const r = await send(op, account, 'DELETE', `/v1/conversions/${id}`);
        r.id = id;
        return;
      }
    }
  };

  const worker = async (): Promise<void> => {
    while (!stopping) {
      await one();
      // An instance that is down answers at once: do not spin on it.
      if (opts.origins().length === 0) await new Promise((r) => setTimeout(r, 50));
    }
  };
  const workers = Array.from({ length: opts.workers }, () => worker());
  return {
    sent,
    async stop() {
      stopping = true;
      await Promise.all(workers);
    },
  };
}

/** Conversion ids a 200/202 promised, with their account, minus those a DELETE answered 200
 *  for; `deleteSent` holds every id a DELETE was sent for, whatever its answer (a lost answer
 *  may hide a delete that happened). */
export function acceptedIds(sent: Sent[]): { live: Map<string, string>; deleted: Set<string>; deleteSent: Set<string> } {
  const live = new Map<string, string>();
  const deleted = new Set<string>();
  const deleteSent = new Set<string>();
  for (const r of sent) {
    if (r.method === 'POST' && (r.status === 200 || r.status === 202) && r.id) live.set(r.id, r.accountId);
  }
  for (const r of sent) {
    if (r.method !== 'DELETE' || !r.id) continue;
    deleteSent.add(r.id);
    if (r.status === 200) { deleted.add(r.id); live.delete(r.id); }
  }
  return { live, deleted, deleteSent };
}

/**
 * Polls GET /v1/conversions/{id} of every accepted conversion until it is terminal (or 404 when
 * a DELETE was sent for it), or the deadline passes; returns those that were not, with the last
 * status seen.
 */
export async function awaitTerminal(origin: () => string | undefined, accounts: Account[], ids: Map<string, string>,
  deleteSent: ReadonlySet<string>, deadlineMs: number): Promise<Array<{ id: string; status: string }>> {
  const keyOf = new Map(accounts.map((a) => [a.accountId, a.key]));
  const pending = new Map([...ids].map(([id, acct]) => [id, { acct, status: 'unknown' }]));
  const until = Date.now() + deadlineMs;
  while (pending.size > 0 && Date.now() < until) {
    for (const [id, p] of [...pending]) {
      const o = origin();
      if (!o) break;
      try {
        const res = await fetch(`${o}/v1/conversions/${id}`, { headers: { 'x-api-key': keyOf.get(p.acct)! }, signal: AbortSignal.timeout(10_000) });
        const c = await res.json() as { status?: string; error?: string };
        p.status = `${res.status} ${c.status ?? c.error ?? ''}`.trim();
        if (res.status === 404 && deleteSent.has(id)) pending.delete(id);
        if (res.status === 200 && TERMINAL.has(c.status ?? '')) pending.delete(id);
      } catch (err) {
        p.status = (err as Error).message;
      }
    }
    if (pending.size > 0) await new Promise((r) => setTimeout(r, 250));
  }
  return [...pending].map(([id, p]) => ({ id, status: p.status }));
}

export const TERMINAL: ReadonlySet<string> = new Set(['completed', 'completed_with_errors', 'failed']);
