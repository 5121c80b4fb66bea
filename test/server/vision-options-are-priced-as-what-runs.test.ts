// Options that want a vision model are priced as what runs: `image_mode: understand` costs the
// understand price (5) only where a model is configured and describes the image; without one,
// or when it does not answer, the built-in description runs and costs what OCR costs (2), in
// the estimate, the reservation and the charge alike. The output says what ran: its `variant`
// and a note beside the description. `figures: describe` costs nothing extra either way.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { MODES, startWorld, type World } from '../helpers/world.js';
import { InlineExecutor } from '../../src/jobs/executor.js';
import { buildFigurePdf } from '../fixtures/build/pdf.js';
import { terminateOcr } from '../../src/converters/shared/ocr.js';

interface File { role: string; status: string; variant?: string; content: string | null; credits: number | null }
interface Conv { status: string; files: File[]; usage: { credits_reserved: number; credits_charged: number; credits_remaining: number } }

const docs = mkdtempSync(path.join(os.tmpdir(), 'docpipe-vision-'));
// the worlds run conversions in this thread: its OCR engines go at the end
t.teardown(async () => { await terminateOcr(); rmSync(docs, { recursive: true, force: true }); });
const png = path.join(docs, 'swatch.png');
await sharp({ create: { width: 240, height: 120, channels: 3, background: '#3060c0' } }).png().toFile(png);
const pdf = await buildFigurePdf(docs);

// An OpenAI-compatible vision endpoint that describes every image, or fails while `down`.
let down = false;
const calls: string[] = [];
const model = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    calls.push(req.url ?? '');
    if (down) res.writeHead(500).end('model overloaded');
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ message: { content: 'A flat blue rectangle.' } }] }));
  });
});
await new Promise<void>((r) => model.listen(0, '127.0.0.1', r));
t.teardown(() => { model.closeAllConnections(); model.close(); });
const ai = { baseUrl: `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`, model: 'test-vision' };

function image(fields: Record<string, string>): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  fd.append('file', new File([readFileSync(png)], 'swatch.png', { type: 'image/png' }));
  return fd;
}

/** Estimate, then submit, of one understood image by a fresh account holding 10 credits. */
async function understand(w: World): Promise<{ estimated: number; conv: Conv; output: File }> {
  const { key } = await w.newKey({ credits: 10 });
  const est = await (await w.req('POST', '/v1/convert/image/estimate', { key, body: image({ image_mode: 'understand' }) })).json() as { credits_total: number };
  const res = await w.req('POST', '/v1/convert/image', { key, body: image({ image_mode: 'understand' }) });
  const conv = await res.json() as Conv;
  if (res.status !== 200) throw new Error(`submit answered ${res.status}: ${JSON.stringify(conv)}`);
  return { estimated: est.credits_total, conv, output: conv.files.find((f) => f.role === 'output')! };
}

t.test('without a vision model, understand is estimated, reserved and charged as OCR, and says so', async (t) => {
  const w = await startWorld(MODES[0]!);
  t.teardown(() => w.close());
  const { estimated, conv, output } = await understand(w);
  t.equal(estimated, 2, 'the estimate prices what runs');
  t.equal(conv.status, 'completed');
  t.equal(conv.usage.credits_reserved, 2, 'the reservation is the estimate');
  t.equal(conv.usage.credits_charged, 2, 'the charge is the estimate');
  t.equal(conv.usage.credits_remaining, 8);
  t.equal(output.variant, 'standard');
  t.match(output.content, /^## Description\n/, 'the description is there');
  t.match(output.content, '- Described by: the built-in analysis, not a vision model (no vision model is configured)', 'with a note saying what ran');

  const fd = new FormData();
  fd.append('figures', 'describe');
  fd.append('file', new File([readFileSync(pdf)], 'figure.pdf', { type: 'application/pdf' }));
  const res = await w.req('POST', '/v1/convert/pdf', { body: fd });
  const c = await res.json() as Conv;
  t.equal(res.status, 200);
  t.equal(c.usage.credits_charged, 1, 'a described figure costs nothing beyond its page');
  const md = c.files.find((f) => f.role === 'output')!;
  t.equal(md.variant, 'standard');
  t.match(md.content, /> \*\*Figure 1 description:\*\* A \d+ × \d+ px raster image[^\n]*\(A built-in description: no vision model is configured\.\)/);
});

t.test('with a vision model, understand costs 5 when the model describes the image and 2 when it does not answer', async (t) => {
  const w = await startWorld(MODES[0]!, {}, {
    executor: new InlineExecutor({ tmpDir: mkdtempSync(path.join(docs, 'tmp-')), allowPrivateNetwork: false, ai }),
  });
  t.teardown(() => w.close());

  const described = await understand(w);
  t.equal(described.estimated, 5);
  t.match(described.conv.usage, { credits_reserved: 5, credits_charged: 5, credits_remaining: 5 });
  t.equal(described.output.variant, 'ai_enhanced');
  t.match(described.output.content, 'A flat blue rectangle.');
  t.notMatch(described.output.content, 'Described by', 'no note when the model wrote it');
  t.ok(calls.some((u) => u.endsWith('/chat/completions')), 'the model was asked');

  down = true;
  const fellBack = await understand(w);
  t.equal(fellBack.estimated, 5, 'the estimate expects the model');
  t.equal(fellBack.conv.usage.credits_reserved, 5);
  t.equal(fellBack.conv.usage.credits_charged, 2, 'but only what ran is charged');
  t.equal(fellBack.conv.usage.credits_remaining, 8, 'and the rest released');
  t.equal(fellBack.output.variant, 'standard');
  t.match(fellBack.output.content, '(the vision model did not answer)');
});
