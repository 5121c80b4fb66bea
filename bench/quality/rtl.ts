// Right-to-left scripts in the quality bench: Arabic and Hebrew documents made here from known
// text (written below) by LibreOffice headless with Debian's Noto fonts, converted by the PDF
// converter in this thread and scored by token F1 against the source text; `pdftotext` (poppler)
// scored beside it. `tsx bench/quality/rtl.ts` runs it alone.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { pdfConverter } from '../../src/converters/pdf.js';
import { convertWith } from '../../test/helpers/convert-ctx.js';
import type { QualityRow } from './types.js';

const TEXTS: Record<string, { lang: string; font: string; paragraphs: string[] }> = {
  arabic: {
    lang: 'ar',
    font: 'Noto Naskh Arabic',
    paragraphs: [
      'تقرير المبيعات السنوي لعام 2023',
      'بلغت المبيعات في عام 2023 حوالي 450 مليون دولار، بزيادة قدرها 12 بالمئة عن العام السابق. وقد ساهم اعتماد نظام Linux في خفض تكاليف التشغيل بنسبة ملحوظة.',
      'تعمل الشركة اليوم في أكثر من عشرين دولة حول العالم، ويبلغ عدد موظفيها 3200 موظف. وتخطط الإدارة لافتتاح ثلاثة مكاتب جديدة في عام 2024.',
      'أما قسم البحث والتطوير فقد أطلق 15 منتجا جديدا، أبرزها منصة Cloud الجديدة التي يستخدمها الآن أكثر من مليون مستخدم.',
    ],
  },
  hebrew: {
    lang: 'he',
    font: 'Noto Sans Hebrew',
    paragraphs: [
      'דוח מכירות שנתי לשנת 2023',
      'החברה מכרה 450 יחידות בשנת 2023, עלייה של 12 אחוז לעומת השנה הקודמת. המעבר למערכת Linux עזר להפחית את עלויות התפעול.',
      'כיום החברה פועלת ביותר מעשרים מדינות ברחבי העולם ומעסיקה 3200 עובדים. ההנהלה מתכננת לפתוח שלושה משרדים חדשים בשנת 2024.',
      'מחלקת המחקר והפיתוח השיקה 15 מוצרים חדשים, ובהם פלטפורמת Cloud שמשמשת כיום יותר ממיליון משתמשים.',
    ],
  },
};

const tokens = (s: string): string[] => s.normalize('NFKC').split(/\s+/).map((w) => w.replace(/[^\p{L}\p{N}]/gu, '')).filter(Boolean);

function tokenF1(got: string, want: string): number {
  const left = new Map<string, number>();
  const w = tokens(want);
  for (const t of w) left.set(t, (left.get(t) ?? 0) + 1);
  const g = tokens(got);
  let hit = 0;
  for (const t of g) { const n = left.get(t) ?? 0; if (n > 0) { hit++; left.set(t, n - 1); } }
  const p = g.length ? hit / g.length : 0, r = w.length ? hit / w.length : 0;
  return p + r ? (2 * p * r) / (p + r) : 0;
}

/** Token F1 in reading order: the sequence of tokens must match, not only the bag. */
function orderedF1(got: string, want: string): number {
  const a = tokens(got), b = tokens(want);
  // longest common subsequence over tokens
  let prev = new Array<number>(b.length + 1).fill(0);
  for (const x of a) {
    const cur = [0];
    for (let j = 1; j <= b.length; j++) cur[j] = x === b[j - 1] ? prev[j - 1]! + 1 : Math.max(prev[j]!, cur[j - 1]!);
    prev = cur;
  }
  const lcs = prev[b.length]!;
  const p = a.length ? lcs / a.length : 0, r = b.length ? lcs / b.length : 0;
  return p + r ? (2 * p * r) / (p + r) : 0;
}

export async function run(): Promise<QualityRow[]> {
  if (spawnSync('soffice', ['--version']).error) {
    return [{ name: 'right-to-left', measured: 'skipped: needs LibreOffice (libreoffice-writer-nogui) and fonts-noto-core', target: 'token F1 ≥ 0.95', pass: false }];
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-bench-rtl-'));
  const rows: QualityRow[] = [];
  try {
    for (const [name, t] of Object.entries(TEXTS)) {
      const html = path.join(dir, `${name}.html`);
      writeFileSync(html, `<html lang="${t.lang}" dir="rtl"><head><meta charset="utf-8"></head><body style="font-family: '${t.font}'">`
        + `${t.paragraphs.map((p, i) => (i === 0 ? `<h1>${p}</h1>` : `<p>${p}</p>`)).join('\n')}</body></html>`);
      execFileSync('soffice', ['--headless', '--norestore', `-env:UserInstallation=file://${dir}/profile`, '--infilter=HTML (StarWriter)',
        '--convert-to', 'pdf:writer_pdf_Export', '--outdir', dir, html], { stdio: 'ignore', timeout: 120_000 });
      const pdf = path.join(dir, `${name}.pdf`);
      const source = t.paragraphs.join('\n');
      const ours = (await convertWith(pdfConverter, pdf)).markdown.replace(/<!--.*?-->/g, '').replace(/^#+ /gm, '');
      const poppler = spawnSync('pdftotext', [pdf, '-'], { encoding: 'utf8' }).stdout ?? '';
      const f1 = orderedF1(ours, source);
      rows.push({
        name: `right-to-left, ${name}`,
        measured: `token F1 ${f1.toFixed(3)} in order (${tokenF1(ours, source).toFixed(3)} as a bag); pdftotext ${orderedF1(poppler, source).toFixed(3)}`,
        target: 'token F1 ≥ 0.95',
        pass: f1 >= 0.95,
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const r of await run()) console.log(`${r.pass ? 'PASS' : 'FAIL'}  ${r.name}: ${r.measured} (target ${r.target})`);
  process.exit(0);
}
