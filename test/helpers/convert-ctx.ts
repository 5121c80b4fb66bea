// A ConvertContext for calling one converter directly in a test, outside the pool.
import { closeSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PEEK_BYTES } from '../../src/converters/registry.js';
import type { ConvertContext, ConvertOptions, ConvertResult, Converter, Peek } from '../../src/converters/types.js';

export interface TestCtx extends ConvertContext {
  progressCalls: Array<[number, number]>;
  cleanup(): void;
}

export function makeCtx(over: Partial<ConvertContext> = {}): TestCtx {
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'docpipe-test-'));
  const progressCalls: Array<[number, number]> = [];
  return {
    signal: new AbortController().signal,
    tmpDir,
    progress(done, total) { progressCalls.push([done, total]); },
    allowPrivateNetwork: false,
    async convertFile(_p: string, _peek: Peek, _o: ConvertOptions): Promise<ConvertResult> {
      throw new Error('convertFile is not wired in this test');
    },
    ...over,
    progressCalls,
    cleanup() { rmSync(tmpDir, { recursive: true, force: true }); },
  };
}

export const defaultOptions: ConvertOptions = { formats: ['markdown'] };

/** Converts one file with one converter and returns the Markdown. */
export async function convertWith(conv: Converter, file: string, options: Partial<ConvertOptions> = {}, over: Partial<ConvertContext> = {}): Promise<ConvertResult> {
  const ctx = makeCtx(over);
  try {
    return await conv.convert(file, { ...defaultOptions, ...options }, ctx);
  } finally {
    ctx.cleanup();
  }
}

/** The first bytes of a file as the registry would peek them (PEEK_BYTES), synchronously. */
export function peekOf(file: string, name = path.basename(file), mime?: string): Peek {
  const fd = openSync(file, 'r');
  const bytes = Buffer.alloc(PEEK_BYTES);
  const n = readSync(fd, bytes, 0, PEEK_BYTES, 0);
  closeSync(fd);
  return { bytes: bytes.subarray(0, n), name, mime };
}
