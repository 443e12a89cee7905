#!/usr/bin/env node
// The `roster` command. It runs the compiled CLI in dist/server (written by `npm run build`, which `npm ci`
// runs through `prepare`); in a checkout without a build it registers tsx and runs the TypeScript sources.
import { existsSync } from 'node:fs';

const built = new URL('../dist/server/src/cli/roster.js', import.meta.url);
if (existsSync(built)) {
  await import(built.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/cli/roster.ts', import.meta.url).href);
}
