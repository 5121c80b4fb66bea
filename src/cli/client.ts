// `docpipe convert` and `docpipe estimate`: the API client of the command line. It picks the
// endpoint from the file type, sends files over 100 MB as chunked uploads (resuming the parts
// the server already has), follows progress over SSE, and writes the outputs next to the input
// or into --out. Talks to DOCPIPE_URL with DOCPIPE_API_KEY.
import { openAsBlob, statSync, mkdirSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { UsageError, type Parsed } from './args.js';
import { Progress } from './progress.js';

export const CHUNKED_OVER = 100 * 1000 * 1000;

const BY_EXT: Record<string, string> = {
  '.pdf': 'pdf', '.png': 'image', '.jpg': 'image', '.jpeg': 'image', '.webp': 'image', '.gif': 'image',
  '.bmp': 'image', '.tif': 'image', '.tiff': 'image', '.docx': 'word', '.xlsx': 'excel', '.xlsm': 'excel',
  '.csv': 'excel', '.pptx': 'powerpoint', '.html': 'html', '.htm': 'html', '.txt': 'text', '.text': 'text',
};
const FORMAT: Record<string, string> = { md: 'markdown', markdown: 'markdown', html: 'html', text: 'text', txt: 'text', pages: 'pages' };
const EXT: Record<string, string> = { markdown: '.md', html: '.html', text: '.txt', pages: '.pages.json' };

export class ApiFailure extends Error {
  constructor(readonly status: number, readonly problem: Record<string, unknown>) {
    super(`${problem.message ?? problem.detail ?? `HTTP ${status}`}${problem.error ? ` (${problem.error})` : ''}`);
  }
}

export interface ClientEnv {
  url: string;
  key: string;
  tty: boolean;
  out: (line: string) => void;
}

export function clientEnv(out: (l: string) => void): ClientEnv {
  const key = process.env.DOCPIPE_API_KEY;
  if (!key) throw new UsageError('set DOCPIPE_API_KEY to your API key');
  return { url: (process.env.DOCPIPE_URL ?? 'http://localhost:8080').replace(/\/+$/, ''), key, tty: Boolean(process.stdout.isTTY), out };
}

async function call(env: ClientEnv, method: string, p: string, body?: RequestInit['body'], headers: Record<string, string> = {}): Promise<Response> {
  const res = await fetch(env.url + p, { method, body, headers: { 'x-api-key': env.key, ...headers }, duplex: 'half' } as RequestInit);
  if (res.status >= 400) {
    const text = await res.text();
    let problem: Record<string, unknown>;
    try { problem = JSON.parse(text); } catch { problem = { message: text.slice(0, 300) }; }
    throw new ApiFailure(res.status, problem);
  }
  return res;
}

async function json<T>(env: ClientEnv, method: string, p: string, body?: unknown): Promise<T> {
  const res = await call(env, method, p, body === undefined ? undefined : JSON.stringify(body), { 'content-type': 'application/json' });
  return await res.json() as T;
}

export function kindOf(input: string, to: string, flag?: string): string {
  if (flag) return flag;
  if (/^https?:\/\//i.test(input)) return 'url';
  const ext = path.extname(input).toLowerCase();
  if (ext === '.md' || ext === '.markdown') return to === 'text' ? 'markdown/text' : 'markdown/html';
  const kind = BY_EXT[ext];
  if (!kind) throw new UsageError(`cannot tell the kind of "${input}" from its extension; pass --kind`);
  return kind;
}

interface Upload { id: string; part_size: number; part_count: number; status: string; parts: Array<{ number: number; bytes: number }> }

/** Sends a big file as a chunked upload; resumes an earlier one recorded beside the file. */
async function upload(env: ClientEnv, file: string, bar: Progress): Promise<string> {
  const size = statSync(file).size;
  const state = `${file}.docpipe-upload.json`;
  let up: Upload | undefined;
  try {
    const saved = JSON.parse(readFileSync(state, 'utf8')) as { id: string };
    up = await json<Upload>(env, 'GET', `/v1/uploads/${saved.id}`);
    if (up.status !== 'pending') up = undefined;
  } catch { up = undefined; }
  if (!up) {
    up = await json<Upload>(env, 'POST', '/v1/uploads', { bytes: size, name: path.basename(file) });
    writeFileSync(state, JSON.stringify({ id: up.id }));
  }
  const have = new Set((up.parts ?? []).map((p) => p.number));
  const fh = await open(file, 'r');
  const parts: Array<{ number: number; etag: string }> = [];
  try {
    for (let n = 1; n <= up.part_count; n++) {
      const start = (n - 1) * up.part_size;
      const len = Math.min(up.part_size, size - start);
      if (have.has(n)) {
        bar.add(len);
        continue;
      }
      const stream = fh.createReadStream({ start, end: start + len - 1, autoClose: false });
      const res = await call(env, 'PUT', `/v1/uploads/${up.id}/parts/${n}`, stream as unknown as RequestInit['body'],
        { 'content-type': 'application/octet-stream', 'content-length': String(len) });
      await res.json();
      bar.add(len);
    }
  } finally {
    await fh.close();
  }
  const now = await json<Upload & { parts: Array<{ number: number; etag: string }> }>(env, 'GET', `/v1/uploads/${up.id}`);
  for (const p of now.parts) parts.push({ number: p.number, etag: p.etag });
  await json(env, 'POST', `/v1/uploads/${up.id}/complete`, { parts });
  rmSync(state, { force: true });
  return up.id;
}

interface Conversion { id: string; status: string; files: Array<{ id: string; role: string; format: string | null; name: string; links: { content: string }; error: { message?: string } | null }> }

async function submit(env: ClientEnv, input: string, kind: string, formats: string[], bar: Progress): Promise<{ status: number; conv: Conversion }> {
  const ep = `/v1/convert/${kind}`;
  let res: Response;
  if (kind === 'url') {
    res = await call(env, 'POST', ep, JSON.stringify({ url: input, formats }), { 'content-type': 'application/json' });
  } else if (statSync(input).size > CHUNKED_OVER) {
    bar.start('upload', statSync(input).size);
    const id = await upload(env, input, bar);
    res = await call(env, 'POST', ep, JSON.stringify({ upload: id, formats }), { 'content-type': 'application/json' });
  } else {
    const fd = new FormData();
    fd.append('file', await openAsBlob(input), path.basename(input));
    fd.append('formats', formats.join(','));
    res = await call(env, 'POST', ep, fd);
  }
  return { status: res.status, conv: await res.json() as Conversion };
}

/** Follows the SSE stream until the conversion ends, moving the progress bar by pages. */
async function follow(env: ClientEnv, id: string, bar: Progress): Promise<void> {
  const res = await call(env, 'GET', `/v1/conversions/${id}/events`, undefined, { accept: 'text/event-stream' });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event === 'progress' && data) {
        const d = JSON.parse(data) as { files: Array<{ pages_done: number; pages_total: number | null }> };
        const total = d.files.reduce((a, f) => a + (f.pages_total ?? 0), 0);
        const doneP = d.files.reduce((a, f) => a + (f.pages_done ?? 0), 0);
        bar.set('pages', doneP, total);
      }
      if (event === 'done' || event === 'deleted') { await reader.cancel(); return; }
    }
  }
}

export async function convertCommand(p: Parsed, env: ClientEnv): Promise<number> {
  const inputs = p.words.slice(1);
  if (inputs.length === 0) throw new UsageError('convert needs at least one file or URL');
  const to = typeof p.flags.to === 'string' ? p.flags.to : 'md';
  const format = FORMAT[to];
  if (!format) throw new UsageError(`--to takes md, html, text or pages, not "${to}"`);
  const outDir = typeof p.flags.out === 'string' ? p.flags.out : undefined;
  if (outDir) mkdirSync(outDir, { recursive: true });
  let failures = 0;
  for (const input of inputs) {
    const bar = new Progress(env.tty, path.basename(input));
    const kind = kindOf(input, format, typeof p.flags.kind === 'string' ? p.flags.kind : undefined);
    const formats = kind === 'markdown/html' ? ['html'] : kind === 'markdown/text' ? ['text'] : [format];
    let { status, conv } = await submit(env, input, kind, formats, bar);
    if (status === 202) {
      if (!p.flags.wait) {
        bar.end();
        env.out(`${input}: accepted as ${conv.id} (${conv.status}); follow it with GET /v1/conversions/${conv.id}`);
        continue;
      }
      await follow(env, conv.id, bar);
      conv = await json<Conversion>(env, 'GET', `/v1/conversions/${conv.id}`);
    }
    bar.end();
    for (const f of conv.files.filter((x) => x.role === 'source' && x.error)) {
      env.out(`${input}: failed: ${f.error?.message ?? 'unknown error'}`);
      failures++;
    }
    for (const f of conv.files.filter((x) => x.role === 'output')) {
      const body = Buffer.from(await (await call(env, 'GET', f.links.content)).arrayBuffer());
      const base = /^https?:/i.test(input) ? f.name.replace(/\.[^.]+$/, '') : path.basename(input).replace(/\.[^.]+$/, '');
      const dir = outDir ?? (/^https?:/i.test(input) ? '.' : path.dirname(input));
      const target = path.join(dir, base + EXT[f.format ?? 'markdown']);
      writeFileSync(target, body);
      env.out(`${input} → ${target}`);
    }
  }
  return failures ? 1 : 0;
}

export async function estimateCommand(p: Parsed, env: ClientEnv): Promise<number> {
  const inputs = p.words.slice(1);
  if (inputs.length === 0) throw new UsageError('estimate needs a file or URL');
  for (const input of inputs) {
    const kind = kindOf(input, 'markdown', typeof p.flags.kind === 'string' ? p.flags.kind : undefined);
    let res: Response;
    if (kind === 'url') res = await call(env, 'POST', `/v1/convert/url/estimate`, JSON.stringify({ url: input }), { 'content-type': 'application/json' });
    else {
      const fd = new FormData();
      fd.append('file', await openAsBlob(input), path.basename(input));
      res = await call(env, 'POST', `/v1/convert/${kind}/estimate`, fd);
    }
    const e = await res.json() as { sources: Array<{ name: string; pages: number; credits: number }>; credits_total: number; balance: number };
    for (const s of e.sources) env.out(`${s.name}: ${s.pages} page(s), ${s.credits} credit(s)`);
    env.out(`total ${e.credits_total} credit(s); balance ${e.balance}`);
  }
  return 0;
}
