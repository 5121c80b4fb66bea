// Hostile legacy files on the worker pool fail their own file only, and the other files of their
// conversion complete: a truncated .doc and a zip-bombed .ods (refused before LibreOffice inflates
// it) beside real LibreOffice runs, and a .doc on which soffice hangs (a stand-in engine that
// hangs on a marker and hands every other file to the real soffice). The hung run is stopped by
// the pool's task limit, which terminates its thread; the pool then kills soffice's whole
// process group, a grandchild included.
// The hung file has a pool of its own with a short limit and only a Word file beside it that
// needs no LibreOffice: a real LibreOffice run on a loaded machine has no time it surely beats
// (one took longer than 20 s in CI), so the real runs get the product's default limit.
import t from 'tap';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROBLEM_FIELDS, startWorld } from '../helpers/world.js';
import { untilTerminal } from '../helpers/until.js';
import { PoolExecutor } from '../../src/pool/pool.js';
import { findSoffice } from '../../src/converters/legacy/index.js';
import { LEGACY_DIR, LETTER, WORKBOOK } from '../fixtures/build/legacy.js';
import { buildPlain } from '../fixtures/build/docx.js';
import { zeroDeflate, writeZip, entry } from '../fixtures/build/zip.js';

/** The hung file's pool: only the hung file should reach its limit (the memo beside it takes
 *  mammoth well under a second, a thread's first load of the converters a few). */
const HANG_LIMIT_MS = 15_000;

const scratch = mkdtempSync(path.join(os.tmpdir(), 'docpipe-legacy-hostile-'));
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));

const realSoffice = findSoffice({ timeoutMs: 1, network: 'isolated' });
if (!realSoffice) throw new Error('LibreOffice is needed for this test (.ci/run installs it)');
const hangPid = path.join(scratch, 'hang.pid');
const engine = path.join(scratch, 'soffice');
writeFileSync(engine, [
  '#!/bin/sh',
  'for last; do :; done',
  'if grep -q DOCPIPE-HANG "$last"; then',
  `  sleep 300 & echo $! > '${hangPid}'`,
  '  wait',
  'fi',
  `exec '${realSoffice}' "$@"`,
  '',
].join('\n'));
chmodSync(engine, 0o755);

const letter = readFileSync(path.join(LEGACY_DIR, 'letter.doc'));
const files = {
  memo: await buildPlain(scratch, 'memo.docx', ['A memo beside hostile files.']),
  letter: path.join(LEGACY_DIR, 'letter.doc'),
  truncated: path.join(scratch, 'truncated.doc'),
  hang: path.join(scratch, 'hang.doc'),
  workbook: path.join(LEGACY_DIR, 'harvest.xls'),
  bomb: path.join(scratch, 'bomb.ods'),
};
writeFileSync(files.truncated, letter.subarray(0, 3000));
// A real .doc with a marker after its last sector: still a .doc to every reader.
writeFileSync(files.hang, Buffer.concat([letter, Buffer.from('DOCPIPE-HANG')]));
writeZip(files.bomb, [
  { name: 'mimetype', data: Buffer.from('application/vnd.oasis.opendocument.spreadsheet'), method: 0, size: 46 },
  { name: 'content.xml', data: zeroDeflate(1024), method: 8, size: 1024 * 1024 * 1024 },
  entry('META-INF/manifest.xml', '<manifest:manifest/>'),
]);

function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

interface FileJ { id: string; name: string; role: string; status: string; credits: number | null; content: string | null; error: Record<string, unknown> | null; outputs?: Array<{ id: string }> }

t.test('hostile legacy files fail alone', async (t) => {
  const saved = process.env.SOFFICE_PATH;
  // Pool threads take the environment as it is when they start.
  process.env.SOFFICE_PATH = engine;
  t.teardown(() => { if (saved === undefined) delete process.env.SOFFICE_PATH; else process.env.SOFFICE_PATH = saved; });
  const world = async (taskTimeoutMs?: number) => {
    const pool = new PoolExecutor({ tmpDir: scratch, allowPrivateNetwork: false }, { threads: 2, taskTimeoutMs });
    const w = await startWorld('embedded', { SWEEP_INTERVAL_S: '0' }, { executor: pool });
    t.teardown(() => w.close());
    return w;
  };
  const [real, short] = await Promise.all([world(), world(HANG_LIMIT_MS)]);

  const submit = async (w: typeof real, endpoint: string, list: Array<[string, string]>): Promise<FileJ[]> => {
    const fd = new FormData();
    for (const [file, name] of list) fd.append('file', new File([readFileSync(file)], name));
    const res = await w.req('POST', `/v1/convert/${endpoint}?wait=1`, { body: fd });
    const body = await res.json() as { id: string };
    t.ok(res.status === 200 || res.status === 202, `${endpoint}: accepted (${res.status})`);
    const done = await untilTerminal(w, body.id, 300_000);
    t.equal(done.status, 'completed_with_errors', `${endpoint}: some files failed, the rest completed`);
    return done.files as unknown as FileJ[];
  };
  const [word, excel, hung] = await Promise.all([
    submit(real, 'word', [[files.memo, 'memo.docx'], [files.letter, 'letter.doc'], [files.truncated, 'truncated.doc']]),
    submit(real, 'excel', [[files.workbook, 'harvest.xls'], [files.bomb, 'bomb.ods']]),
    submit(short, 'word', [[files.memo, 'memo.docx'], [files.hang, 'hang.doc']]),
  ]);

  const source = (list: FileJ[], name: string): FileJ => list.find((f) => f.role === 'source' && f.name === name)!;
  /** Completed, or the assertion names the file's error (what a loaded CI machine made of it). */
  const completed = (list: FileJ[], name: string, what: string): void => {
    const f = source(list, name);
    t.equal(f.status, 'completed', f.status === 'completed' ? what : `${what} (${f.status}: ${String(f.error?.detail)})`);
  };
  const output = (list: FileJ[], name: string): string => {
    const id = source(list, name).outputs?.[0]?.id;
    return list.find((f) => f.id === id)?.content ?? '';
  };
  const failed = (list: FileJ[], name: string, detail: RegExp): void => {
    const f = source(list, name);
    t.equal(f.status, 'failed', `${name} failed`);
    t.equal(f.error?.error, 'invalid_document', `${name}: invalid_document`);
    t.match(String(f.error?.detail), detail, `${name}: ${String(f.error?.detail)}`);
    t.same(PROBLEM_FIELDS.filter((k) => f.error?.[k] === undefined), [], `${name}: a complete Problem`);
    t.notOk(f.credits, `${name} costs nothing`);
  };

  completed(word, 'memo.docx', 'the memo completed');
  t.match(output(word, 'memo.docx'), 'A memo beside hostile files.');
  completed(word, 'letter.doc', 'the good .doc beside them completed');
  t.match(output(word, 'letter.doc'), LETTER.sentence);
  failed(word, 'truncated.doc', /damaged compound/);

  completed(excel, 'harvest.xls', 'the good .xls beside the bomb completed');
  t.match(output(excel, 'harvest.xls'), `## ${WORKBOOK.sheet}`);
  failed(excel, 'bomb.ods', /zip|inflate|ratio/);

  completed(hung, 'memo.docx', 'the file beside the hung one completed');
  t.match(output(hung, 'memo.docx'), 'A memo beside hostile files.');
  failed(hung, 'hang.doc', /took longer than 15 s/);
  t.ok(existsSync(hangPid), 'the stand-in engine hung');
  const grandchild = Number(readFileSync(hangPid, 'utf8'));
  for (const end = Date.now() + 30_000; alive(grandchild) && Date.now() < end;) await new Promise((r) => setTimeout(r, 50));
  t.notOk(alive(grandchild), 'the hung run went down with its whole process group');

  const res = await short.req('POST', '/v1/convert/text?wait=10', { json: { text: 'still here' } });
  t.equal(res.status, 200, 'the server still converts');
});
