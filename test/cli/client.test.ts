import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startWorld } from '../helpers/world.js';
import { main } from '../../src/cli/index.js';
import { buildReport } from '../fixtures/build/docx.js';
import { buildReportPdf } from '../fixtures/build/pdf.js';

t.test('the CLI client converts files end to end against a server', async (t) => {
  const w = await startWorld('postgres');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-client-'));
  const saved = { url: process.env.DOCPIPE_URL, key: process.env.DOCPIPE_API_KEY };
  process.env.DOCPIPE_URL = w.url;
  process.env.DOCPIPE_API_KEY = w.key;
  t.teardown(async () => {
    process.env.DOCPIPE_URL = saved.url;
    process.env.DOCPIPE_API_KEY = saved.key;
    await w.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const run = async (...args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(args, (l) => out.push(l), (l) => err.push(l));
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  await t.test('a docx becomes Markdown next to it', async (t) => {
    const docx = await buildReport(dir, 'report.docx');
    const r = await run('convert', docx);
    t.equal(r.code, 0, r.err);
    const md = path.join(dir, 'report.md');
    t.ok(existsSync(md));
    t.match(readFileSync(md, 'utf8'), /^# /m, 'a heading from the document');
    t.match(r.out, 'report.md');
  });

  await t.test('a PDF becomes HTML in --out', async (t) => {
    const pdf = await buildReportPdf(dir, 'paper.pdf');
    const out = path.join(dir, 'out');
    const r = await run('convert', pdf, '--to', 'html', '--out', out, '--wait');
    t.equal(r.code, 0, r.err);
    const html = readFileSync(path.join(out, 'paper.html'), 'utf8');
    t.match(html, /<h1>|<h2>/);
    t.match(html, '<table>');
  });

  await t.test('estimate prints the price and the balance', async (t) => {
    const pdf = path.join(dir, 'paper.pdf');
    const r = await run('estimate', pdf);
    t.equal(r.code, 0, r.err);
    t.match(r.out, /paper\.pdf: \d+ page\(s\), \d+ credit\(s\)/);
    t.match(r.out, /total \d+ credit\(s\); balance \d+/);
  });

  await t.test('a 402 is a clear error and a non-zero exit', async (t) => {
    const poor = await w.newKey({ credits: 0 });
    process.env.DOCPIPE_API_KEY = poor.key;
    const r = await run('convert', path.join(dir, 'report.docx'), '--out', path.join(dir, 'poor'));
    process.env.DOCPIPE_API_KEY = w.key;
    t.equal(r.code, 1);
    t.match(r.err, 'insufficient_credits');
    t.notOk(existsSync(path.join(dir, 'poor', 'report.md')), 'nothing written');
  });

  await t.test('usage errors exit 2', async (t) => {
    t.equal((await run('convert')).code, 2);
    t.equal((await run('convert', 'file.xyz')).code, 2);
  });
});
