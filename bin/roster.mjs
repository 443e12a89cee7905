#!/usr/bin/env node
// The `roster` command. It runs the compiled CLI in dist/server (written by `npm run build`, which `npm ci`
// runs through `prepare`). In a checkout without a build, or whose build is older than a source file, it
// registers tsx and runs the TypeScript sources instead, so an edit is never shadowed by a stale build.
//
// The staleness check runs on every call, so it is kept cheap. Where the sources are absent (the image ships
// only bin/ and dist/) it costs two stats and three failed readdirs. In a checkout it compares the
// modification time of every .ts file under src/, cluster/ and machines/ with the build's stamp: one readdir
// per directory and one stat per file (some 20 directories and 175 files: about 2 ms, against some 40 ms for
// Node itself to start), stopping at the first file newer than the build. A file's own time is the only
// thing that changes on every edit (a directory's does not when a file is rewritten in place), so no cheaper
// stamp would keep the guarantee.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const built = `${root}dist/server/src/cli/roster.js`;
// `npm run build` copies package.json into dist/server last: its time is the build's.
const stamp = `${root}dist/server/package.json`;

/** Whether a .ts file under `dir` (recursively) was modified after `since` (ms); false when `dir` is absent. */
function newerSource(dir, since) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return false;
  }
  for (const f of entries) {
    const path = `${dir}/${f.name}`;
    if (f.isDirectory() ? newerSource(path, since) : f.name.endsWith('.ts') && statSync(path).mtimeMs > since) return true;
  }
  return false;
}

/** Whether the build is there and no source is newer than it. */
function buildIsFresh() {
  if (!existsSync(built) || !existsSync(stamp)) return false;
  const since = statSync(stamp).mtimeMs;
  return !['src', 'cluster', 'machines'].some((dir) => newerSource(root + dir, since));
}

if (buildIsFresh()) {
  await import(pathToFileURL(built).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/cli/roster.ts', import.meta.url).href);
}
