// The link between an acceptor thread and its process's main thread (acceptors.ts starts the
// threads). An acceptor thread serves HTTP with database and Redis connections of its own; what
// is one per process stays in the main thread and is reached over this link:
// - the converter pool: counts for pricing (`count`), and whether it is saturated (read from
//   shared memory the main thread keeps current, without a round trip);
// - the job runner: jobs an acceptor committed, claimed in their insert by the process's runner,
//   are started by it (`runClaimed`), which tells the acceptor when each one ends (`jobDone`),
//   and stopped on a delete (`abort`);
// - the gate audit (`watch`) and the webhook dispatcher (`wake`);
// - the in-process gate, when there is no Redis: every call is a round trip to the one gate, so
//   a rate limit or a reservation counts per account, not per thread;
// - the metrics: GET /metrics on any thread answers for the whole process (`metrics`, which
//   gathers every thread's registry with `collect`).
// A call carries an id and gets exactly one reply; errors cross as SerializedError.
import type { MessagePort } from 'node:worker_threads';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import { AggregatorRegistry } from 'prom-client';
import { reviveError, serializeError, type SerializedError } from '../errors.js';
import type { Count } from '../converters/types.js';
import type { RunResult } from '../converters/registry.js';
import { countTask, type Executor, type Task } from '../jobs/executor.js';
import type { AuditWatch, JobOutcome, JobStarter } from '../jobs/context.js';
import { WATCH_MS, type AuditCounts } from '../billing/audit.js';
import type { Gate } from '../billing/gate.js';
import type { JobRunner } from '../jobs/runner.js';
import type { JobRow } from '../jobs/queue.js';

export type MetricsJson = Array<MetricObjectWithValues<MetricValue<string>>>;
export interface MetricsText { body: string; contentType: string }

/** Calls an acceptor makes of its process. */
type Call =
  | { op: 'count'; task: Task }
  | { op: 'runClaimed'; jobs: JobRow[] }
  | { op: 'gate'; method: GateMethod; args: unknown[] }
  | { op: 'metrics' };
/** Notes an acceptor sends its process, with no reply. */
type Note = { op: 'abort'; conversionId: string } | { op: 'watch'; accountId: string } | { op: 'wake' };
/** What the process sends an acceptor. */
type Down =
  | { ev: 'reply'; id: number; ok: true; value: unknown }
  | { ev: 'reply'; id: number; ok: false; error: SerializedError }
  | { ev: 'jobDone'; id: string; outcome?: JobOutcome }
  | { ev: 'collect'; id: number }
  | { ev: 'drain' };
type Up = (Call & { id: number }) | Note | { ev: 'collected'; id: number; metrics: MetricsJson } | { ev: 'drained' };

type GateMethod = Exclude<keyof Gate, 'close'>;

/** Index of the pool's state in the shared Int32Array, and of whether the process has started. */
const SATURATED = 0;
const QUEUED = 1;
const STARTED = 2;

/** Memory the main thread writes the pool's state into, and once every acceptor listens, that
 *  the process has started; every acceptor reads it. */
export function poolStateBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT);
}

/** The process's side: what it offers its acceptor threads. */
export interface ProcessParts {
  executor: Executor;
  wake(): void;
  /** The in-process gate, served to acceptors when there is no Redis. */
  gate?: Gate;
  /** The main thread's own metrics. */
  metrics(): Promise<MetricsJson>;
  contentType: string;
}

/**
 * The main thread's end of every acceptor's link: serves their calls, keeps the pool's state in
 * shared memory current, and gathers the process's metrics.
 */
export class AcceptorHub {
  private readonly ports = new Set<MessagePort>();
  private readonly pool: Int32Array;
  private nextId = 1;
  private readonly collecting = new Map<number, (m: MetricsJson) => void>();
  private readonly draining = new Map<MessagePort, () => void>();
  private jobs?: { runner: JobRunner; audit: AuditWatch };

  constructor(private parts: ProcessParts, readonly state: SharedArrayBuffer) {
    this.pool = new Int32Array(state);
  }

  /** The main thread's job runner and gate audit, once its conversion service exists. */
  serve(jobs: { runner: JobRunner; audit: AuditWatch }): void {
    this.jobs = jobs;
  }

  /**
   * Keeps the pool's state in shared memory current until the returned stop is called: written
   * whenever the executor says it may have changed (Executor.onChange: the one writer, whoever
   * queued the work, an acceptor's count or job or this thread's own), and every `backstopMs`
   * for what the executor does unseen (a pool thread replaced after a crash taking queued work).
   * The state was copied every 20 ms once: about 4 ms of the main thread's CPU a second, idle or
   * not.
   */
  follow(backstopMs = 1_000): () => void {
    // The executor has no way to forget a listener: this one goes quiet instead.
    let following = true;
    this.refresh();
    this.parts.executor.onChange?.(() => { if (following) this.refresh(); });
    const backstop = setInterval(() => this.refresh(), backstopMs);
    backstop.unref();
    return () => {
      following = false;
      clearInterval(backstop);
    };
  }

  /** Every acceptor listens: the process answers /readyz from any of them (AcceptorLink.started). */
  markStarted(): void {
    Atomics.store(this.pool, STARTED, 1);
  }

  /** The pool's state as acceptors read it. */
  private refresh(): void {
    Atomics.store(this.pool, SATURATED, this.parts.executor.saturated?.() ? 1 : 0);
    Atomics.store(this.pool, QUEUED, this.parts.executor.queued());
  }

  attach(port: MessagePort): void {
    this.ports.add(port);
    port.on('message', (m: Up) => void this.handle(port, m));
  }

  detach(port: MessagePort): void {
    this.ports.delete(port);
    this.draining.get(port)?.();
  }

  /** Asks every acceptor to drain (stop listening, answer what it holds, close its
   *  connections); settles when all have, or after `ms`. */
  async drain(ms: number): Promise<void> {
    const all = [...this.ports].map((port) => new Promise<void>((resolve) => {
      this.draining.set(port, resolve);
      port.postMessage({ ev: 'drain' } satisfies Down);
    }));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(all), new Promise((r) => { timer = setTimeout(r, ms); })]);
    clearTimeout(timer);
  }

  /** The whole process's metrics: this thread's and every acceptor's, added up. */
  async metricsText(): Promise<MetricsText> {
    const own = await this.parts.metrics();
    const others = await Promise.all([...this.ports].map((port) => new Promise<MetricsJson>((resolve) => {
      const id = this.nextId++;
      const timer = setTimeout(() => { this.collecting.delete(id); resolve([]); }, 5_000);
      this.collecting.set(id, (m) => { clearTimeout(timer); resolve(m); });
      port.postMessage({ ev: 'collect', id } satisfies Down);
    })));
    const registry = AggregatorRegistry.aggregate([own, ...others]);
    return { body: await registry.metrics(), contentType: this.parts.contentType };
  }

  private async handle(port: MessagePort, m: Up): Promise<void> {
    if ('ev' in m) {
      if (m.ev === 'collected') this.collecting.get(m.id)?.(m.metrics);
      else if (m.ev === 'drained') this.draining.get(port)?.();
      return;
    }
    switch (m.op) {
      case 'abort': this.jobs!.runner.abortConversion(m.conversionId); return;
      case 'watch': this.jobs!.audit.watch(m.accountId); return;
      case 'wake': this.parts.wake(); return;
      default: break;
    }
    let reply: Down;
    try {
      reply = { ev: 'reply', id: m.id, ok: true, value: await this.answer(port, m) };
    } catch (err) {
      reply = { ev: 'reply', id: m.id, ok: false, error: serializeError(err) };
    }
    port.postMessage(reply);
  }

  private async answer(port: MessagePort, m: Call): Promise<unknown> {
    switch (m.op) {
      case 'count': {
        const ex = this.parts.executor;
        return await (ex.count ? ex.count(m.task) : countTask(m.task));
      }
      case 'runClaimed': {
        const started = await this.jobs!.runner.startClaimed(m.jobs);
        for (const { id, done } of started) {
          void done.then((outcome) => {
            if (this.ports.has(port)) port.postMessage({ ev: 'jobDone', id, outcome } satisfies Down);
          });
        }
        return started.map((s) => s.id);
      }
      case 'gate': {
        const gate = this.parts.gate;
        if (!gate) throw new Error('this process has no in-process gate to share');
        return await (gate[m.method] as (...a: unknown[]) => Promise<unknown>)(...m.args);
      }
      case 'metrics':
        return await this.metricsText();
    }
  }
}

/** An acceptor thread's end of its link. */
export class AcceptorLink {
  private nextId = 1;
  private readonly calls = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private readonly jobs = new Map<string, (outcome?: JobOutcome) => void>();
  private readonly pool: Int32Array;
  /** Set by the acceptor: its metrics, and what it does when asked to drain. */
  collect: () => Promise<MetricsJson> = async () => [];
  onDrain: () => Promise<void> = async () => {};

  constructor(private port: MessagePort, state: SharedArrayBuffer) {
    this.pool = new Int32Array(state);
    port.on('message', (m: Down) => void this.receive(m));
  }

  call<T>(c: Call): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.port.postMessage({ ...c, id } satisfies Up);
    });
  }

  note(n: Note): void {
    this.port.postMessage(n satisfies Up);
  }

  saturated(): boolean {
    return Atomics.load(this.pool, SATURATED) === 1;
  }

  queued(): number {
    return Atomics.load(this.pool, QUEUED);
  }

  /** Whether every acceptor of the process listens (AcceptorHub.markStarted). */
  started(): boolean {
    return Atomics.load(this.pool, STARTED) === 1;
  }

  /** A promise that settles when the process says the job has ended. */
  jobEnds(id: string): Promise<JobOutcome | undefined> {
    return new Promise<JobOutcome | undefined>((resolve) => this.jobs.set(id, resolve));
  }

  private async receive(m: Down): Promise<void> {
    switch (m.ev) {
      case 'reply': {
        const c = this.calls.get(m.id);
        this.calls.delete(m.id);
        if (!c) return;
        if (m.ok) c.resolve(m.value);
        else c.reject(reviveError(m.error));
        return;
      }
      case 'jobDone': {
        const end = this.jobs.get(m.id);
        this.jobs.delete(m.id);
        end?.(m.outcome);
        return;
      }
      case 'collect':
        this.port.postMessage({ ev: 'collected', id: m.id, metrics: await this.collect() } satisfies Up);
        return;
      case 'drain':
        await this.onDrain();
        this.port.postMessage({ ev: 'drained' } satisfies Up);
        return;
    }
  }
}

/** The process's converter pool as an acceptor sees it: counts and its saturation. Jobs run
 *  in the main thread, never here. */
export class LinkedExecutor implements Executor {
  constructor(private link: AcceptorLink) {}

  run(): Promise<RunResult> {
    return Promise.reject(new Error('conversions run on the process\'s job runner, not in an acceptor thread'));
  }

  count(task: Task): Promise<Count> {
    return this.link.call<Count>({ op: 'count', task });
  }

  queued(): number {
    return this.link.queued();
  }

  saturated(): boolean {
    return this.link.saturated();
  }

  async close(): Promise<void> {}
}

/** The process's job runner as an acceptor sees it. */
export class LinkedRunner implements JobStarter {
  constructor(private link: AcceptorLink, readonly owner: string) {}

  /** The process's runner hands back what it is given once it is stopping. */
  claims(): boolean {
    return true;
  }

  async runClaimed(jobs: JobRow[]): Promise<Array<Promise<JobOutcome | undefined>>> {
    const started = await this.link.call<string[]>({ op: 'runClaimed', jobs });
    return started.map((id) => this.link.jobEnds(id));
  }

  abortConversion(conversionId: string): void {
    this.link.note({ op: 'abort', conversionId });
  }
}

/** How often an acceptor tells the process again that an account it keeps reserving for is
 *  active: far within the WATCH_MS the process audits an account after the last word of it. */
export const WATCH_RENOTE_MS = WATCH_MS / 15;

/** Accounts an acceptor remembers having noted. */
const NOTED_MAX = 10_000;

/** The process's gate audit as an acceptor sees it: it watches the accounts this thread
 *  reserved for; the passes run in the main thread. An account is noted once a WATCH_RENOTE_MS,
 *  not at every reservation (each note wakes the main thread). */
export class LinkedAudit implements AuditWatch {
  private noted = new Map<string, number>();

  constructor(private link: AcceptorLink, private now: () => number = Date.now) {}

  watch(accountId: string): void {
    const now = this.now();
    const last = this.noted.get(accountId);
    if (last !== undefined && now - last < WATCH_RENOTE_MS) return;
    // Past NOTED_MAX accounts it starts over: a few notes more, and the memory stays bounded.
    if (this.noted.size >= NOTED_MAX) this.noted.clear();
    this.noted.set(accountId, now);
    this.link.note({ op: 'watch', accountId });
  }

  async run(): Promise<AuditCounts> {
    return { settled: 0, released: 0, adopted: 0, adjusted: 0 };
  }
}

/** Every method of the Gate interface but close (a record, so that a new method must be named here). */
const GATE_METHODS: Record<GateMethod, true> = {
  reserve: true, settle: true, release: true, load: true, adjust: true, balance: true, readBalance: true, running: true,
  rateLimit: true, held: true, holdings: true, mend: true, adopt: true, forget: true,
};

/** The process's in-process gate, reached over the link (no Redis configured). */
export function linkedGate(link: AcceptorLink): Gate {
  const call = (method: GateMethod) => (...args: unknown[]) => link.call({ op: 'gate', method, args });
  const gate = Object.fromEntries(Object.keys(GATE_METHODS).map((m) => [m, call(m as GateMethod)])) as unknown as Gate;
  gate.close = async () => {};
  return gate;
}
