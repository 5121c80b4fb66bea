#!/usr/bin/env node
// `npx docpipe …`: the admin and client CLI. The sources are TypeScript, run through tsx.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/index.ts');
process.exitCode = await main(process.argv.slice(2));
