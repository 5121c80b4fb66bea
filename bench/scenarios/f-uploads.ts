// F. Uploads: a 100 MB multipart body must raise the server's RSS by at most 64 MB (bodies are
// streamed to disk, never held), and a 1 GiB chunked upload (POST /v1/uploads, the parts PUT
// four at a time, then complete) must run at ≥ 200 MB/s on loopback. The multipart body is a
// PDF submit whose file is not a PDF: the server reads it all to disk, then answers 415, so the
// reading is of the body alone, not of a converter.
import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';
import { multipart, requestJson } from '../client.js';
import { runAll } from '../load.js';
import { MB, sampleRss, thin } from '../rss.js';
import { atLeastRow, atMostRow, type Scenario } from '../types.js';

const MULTIPART_BYTES = 100_000_000;

export const uploads: Scenario = {
  id: 'F',
  title: 'uploads',
  async run(ctx) {
    const S = 'F uploads';
    const chunkedBytes = ctx.quick ? 24 * MB : 1024 * MB;
    const inst = await ctx.bench.start();
    const pool = new Pool(inst.origin, { connections: 4, bodyTimeout: 120_000, headersTimeout: 120_000 });
    try {
      // warm-up: the same two paths, small, so lazy start-up work is not counted below
      await requestJson(pool, ctx.bench.key, 'POST', '/v1/convert/pdf',
        multipart({ name: 'small.pdf', type: 'application/pdf', data: randomBytes(1_000_000) }));
      await chunkedUpload(pool, ctx.bench.key, 4 * MB);

      // 1. one multipart body just under the 100 MB edge limit
      const overhead = multipart({ name: 'big.pdf', type: 'application/pdf', data: Buffer.alloc(0) }).body.length;
      const size = (ctx.quick ? 4_000_000 : MULTIPART_BYTES) - overhead - 64;
      const body = multipart({ name: 'big.pdf', type: 'application/pdf', data: randomBytes(size) });
      await new Promise((r) => setTimeout(r, 500));
      const before = inst.rss();
      const rss = sampleRss(inst.pid, 10);
      ctx.log(`F: multipart body of ${(body.body.length / 1e6).toFixed(1)} MB`);
      const t0 = performance.now();
      const mp = await requestJson(pool, ctx.bench.key, 'POST', '/v1/convert/pdf', body);
      const mpSeconds = (performance.now() - t0) / 1000;
      const mpSamples = rss.stop();
      const raise = (Math.max(...mpSamples.map((s) => s.rss)) - before) / MB;

      // 2. the chunked upload
      ctx.log(`F: chunked upload of ${chunkedBytes / MB} MiB`);
      const rss2 = sampleRss(inst.pid, 50);
      const up = await chunkedUpload(pool, ctx.bench.key, chunkedBytes);
      const upSamples = rss2.stop();
      const { seconds, completed, done } = up;
      const rate = completed ? chunkedBytes / 1e6 / seconds : 0;
      return {
        rows: [
          atMostRow(S, `${Math.round(body.body.length / 1e6)} MB multipart: RSS raise`, { value: raise, unit: 'MB', signed: true }, 64,
            `${(body.body.length / 1e6).toFixed(1)} MB body in ${mpSeconds.toFixed(2)} s, answered ${mp.status}${mp.status === 415 ? ' (not a PDF, as sent)' : ''}`),
          atLeastRow(S, `${ctx.quick ? '24 MiB' : '1 GiB'} chunked upload`, { value: rate, unit: 'MB/s' }, 200,
            completed ? `${up.parts} parts of ${up.partSize / MB} MiB, 4 at a time, in ${seconds.toFixed(2)} s; RSS peak ${Math.round(Math.max(...upSamples.map((s) => s.rss)) / MB)} MB`
              : `complete answered ${done.status}: ${done.text.slice(0, 200)}`),
        ],
        raw: {
          multipart: { body_bytes: body.body.length, status: mp.status, seconds: mpSeconds, rss_before_mb: before / MB, rss_raise_mb: raise, rss_mb: thin(mpSamples) },
          chunked: { bytes: chunkedBytes, part_size: up.partSize, parts: up.parts, seconds, mb_per_s: rate, complete_status: done.status, rss_mb: thin(upSamples) },
        },
      };
    } finally {
      await pool.close();
      await inst.stop();
    }
  },
};

/** Creates an upload of `bytes`, PUTs its parts four at a time, completes it; timed end to end. */
async function chunkedUpload(pool: Pool, key: string, bytes: number)
  : Promise<{ seconds: number; completed: boolean; done: { status: number; text: string }; parts: number; partSize: number }> {
  const t0 = performance.now();
  const created = await requestJson(pool, key, 'POST', '/v1/uploads',
    { body: Buffer.from(JSON.stringify({ bytes, name: 'big.bin' })), contentType: 'application/json' });
  if (created.status !== 201) throw new Error(`POST /v1/uploads answered ${created.status}: ${created.text.slice(0, 300)}`);
  const upload = created.data as { id: string; part_size: number };
  const block = randomBytes(Math.min(upload.part_size, bytes));
  const numbers = Array.from({ length: Math.ceil(bytes / upload.part_size) }, (_, i) => i + 1);
  const parts: Array<{ number: number; etag: string }> = [];
  await runAll(numbers, 4, async (n) => {
    const len = Math.min(upload.part_size, bytes - (n - 1) * upload.part_size);
    const res = await pool.request({ method: 'PUT', path: `/v1/uploads/${upload.id}/parts/${n}`,
      headers: { 'x-api-key': key, 'content-type': 'application/octet-stream' }, body: block.subarray(0, len) });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`part ${n} answered ${res.statusCode}: ${text.slice(0, 300)}`);
    parts.push({ number: n, etag: (JSON.parse(text) as { etag: string }).etag });
  });
  const done = await requestJson(pool, key, 'POST', `/v1/uploads/${upload.id}/complete`,
    { body: Buffer.from(JSON.stringify({ parts: parts.sort((a, b) => a.number - b.number) })), contentType: 'application/json' });
  const completed = done.status === 200 && (done.data as { status?: string }).status === 'completed';
  return { seconds: (performance.now() - t0) / 1000, completed, done, parts: numbers.length, partSize: upload.part_size };
}
