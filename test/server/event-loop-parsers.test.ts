// The event loop never opens a document: a PDF is sniffed by its first bytes on the main thread,
// and counted (for the estimate and the sync limit) and converted on the pool's threads, so the
// main thread never loads mupdf or any other parser. A loader hook registered before the server
// is imported reports every parser module this thread resolves.
import t from 'tap';
import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const { port1, port2 } = new MessageChannel();
const seen: string[] = [];
port1.on('message', (url: string) => seen.push(url));
port1.unref();
register('../helpers/parser-watch.mjs', import.meta.url, { data: { port: port2 }, transferList: [port2] });

// Imported after the hook, so that everything the server loads passes through it.
const { oneMode, startWorld } = await import('../helpers/world.js');

/** A PDF written by hand (no PDF library on this thread): one line of text on each page. */
function handMadePdf(lines: readonly string[]): Buffer {
  const objects: string[] = [];
  const pageIds = lines.map((_, i) => 4 + i * 2);
  objects[1] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[2] = `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${lines.length} >>`;
  objects[3] = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';
  lines.forEach((line, i) => {
    const stream = `BT /F1 14 Tf 72 720 Td (${line}) Tj ET`;
    objects[4 + i * 2] = `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + i * 2} 0 R >>`;
    objects[5 + i * 2] = `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`;
  });
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  for (let id = 1; id < objects.length; id++) {
    offsets[id] = out.length;
    out += `${id} 0 obj\n${objects[id]}\nendobj\n`;
  }
  const xref = out.length;
  out += `xref\n0 ${objects.length}\n0000000000 65535 f \n`;
  for (let id = 1; id < objects.length; id++) out += `${String(offsets[id]).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

const pdf = handMadePdf(['Counted on a pool thread', 'Converted on a pool thread']);

function form(): FormData {
  const fd = new FormData();
  fd.append('file', new Blob([pdf], { type: 'application/pdf' }), 'two.pdf');
  fd.append('quality', 'fast');
  return fd;
}

for (const mode of oneMode()) {
  await t.test(`${mode}: a PDF estimated and converted through the API leaves mupdf unloaded on the event loop`, async (t) => {
    const w = await startWorld(mode, {}, { pool: true });
    t.teardown(() => w.close());

    const est = await w.req('POST', '/v1/convert/pdf/estimate', { body: form() });
    t.equal(est.status, 200);
    const estimate = await est.json() as { sources: Array<{ name: string; pages: number }> };
    t.same(estimate.sources.map((s) => [s.name, s.pages]), [['two.pdf', 2]], 'the pool counted both pages');

    const res = await w.req('POST', '/v1/convert/pdf', { body: form() });
    t.equal(res.status, 200);
    const c = await res.json() as { status: string; files: Array<{ role: string; format?: string; content?: string }> };
    t.equal(c.status, 'completed');
    const md = c.files.find((f) => f.role === 'output' && f.format === 'markdown')!.content!;
    t.match(md, 'Counted on a pool thread');
    t.match(md, 'Converted on a pool thread');

    t.same(seen.filter((u) => /mupdf/.test(u)), [], 'no mupdf module was resolved by the main thread');
    t.same(seen, [], 'nor any other document parser');
  });
}
