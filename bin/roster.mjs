#!/usr/bin/env node
// The `roster` command. It runs the compiled CLI in dist/server (written by `npm run build`, which `npm ci`
// runs through `prepare`). In a checkout without a build, or whose build is older than a source file, it
// registers tsx and runs the TypeScript sources instead, so an edit is never shadowed by a stale build.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const built = `${root}dist/server/src/cli/roster.js`;
// `npm run build` copies package.json into dist/server last: its time is the build's.
const stamp = `${root}dist/server/package.json`;

/** The newest modification time (ms) of the TypeScript sources the build compiles; 0 when none are here (an image). */
function newestSource() {
  let newest = 0;
  for (const dir of ['src', 'cluster', 'machines']) {
    if (!existsSync(root + dir)) continue;
    for (const f of readdirSync(root + dir, { recursive: true, withFileTypes: true })) {
      if (f.isFile() && f.name.endsWith('.ts')) newest = Math.max(newest, statSync(`${f.parentPath ?? f.path}/${f.name}`).mtimeMs);
    }
  }
  return newest;
}

if (existsSync(built) && existsSync(stamp) && statSync(stamp).mtimeMs >= newestSource()) {
  await import(pathToFileURL(built).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/cli/roster.ts', import.meta.url).href);
}
