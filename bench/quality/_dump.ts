import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as mupdf from 'mupdf';
import { pdfConverter } from '../../src/converters/pdf.js';
import { bareKey, outlineKey, readOutline } from '../../src/converters/pdf/outline.js';
import { convertWith } from '../../test/helpers/convert-ctx.js';
import { texlivePdfs } from '../corpus.js';
const dir = mkdtempSync(path.join(os.tmpdir(), 'dump-'));
for (const f of texlivePdfs(2)) {
  const doc = mupdf.Document.openDocument(readFileSync(f.path), 'application/pdf');
  const entries = readOutline(doc); doc.destroy();
  if (entries.filter((e) => e.level <= 3).length < 3) continue;
  const copy = path.join(dir, f.name);
  execFileSync('qpdf', ['--empty', '--pages', f.path, '--', copy], { stdio: 'ignore' });
  const md = (await convertWith(pdfConverter, copy)).markdown;
  let page = 1; let first = true;
  for (const l of md.split('\n')) {
    const mk = /^<!-- page (\d+) -->$/.exec(l); if (mk) { page = Number(mk[1]); continue; }
    const m = /^(#{1,6}) (.+)$/.exec(l); if (!m) continue;
    const text = m[2]!.replace(/[⁰¹²³⁴⁵⁶⁷⁸⁹∗†‡]+$/u, '');
    const k = outlineKey(text), b = bareKey(text);
    const ok0 = entries.some((e) => k === e.key || (b !== '' && (b === e.key || b === e.bare)));
    if (process.env.ALL || !ok0) console.log(`${f.name}\tp${page}\t${m[1]}\t${first ? 'FIRST ' : ''}${text.slice(0, 90)}`);
    first = false;
  }
}
