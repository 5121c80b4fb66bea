// A ConvertContext for calling one converter directly in a test, outside the pool.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
