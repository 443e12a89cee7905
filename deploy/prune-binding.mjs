#!/usr/bin/env node
// Keeps only the uWebSockets.js native binding that the running Node.js loads, and deletes the builds for
// every other platform, CPU and Node.js ABI (about 250 MB of the package's 257 MB). Run it with the Node.js
// that will run the agent, on the platform it will run on: the image's final stage runs it right after
// `npm ci`. It fails, and so fails the image build, when the package has no build for this Node.js.
//
//   node deploy/prune-binding.mjs [--dry-run]
import { readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const dryRun = process.argv.includes('--dry-run');
const require = createRequire(join(process.cwd(), 'package.json'));
const dir = dirname(require.resolve('uWebSockets.js/package.json'));
const keep = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;

const builds = readdirSync(dir).filter((f) => /^uws_.+\.node$/.test(f));
if (!builds.includes(keep)) {
  console.error(`prune-binding: ${dir} has no ${keep} (Node.js ${process.version}); builds present: ${builds.join(', ')}`);
  process.exit(1);
}
let freed = 0;
for (const f of builds.filter((b) => b !== keep)) {
  freed += statSync(join(dir, f)).size;
  if (!dryRun) rmSync(join(dir, f));
}
const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
console.log(`prune-binding: kept ${keep} (${mb(statSync(join(dir, keep)).size)}), ${dryRun ? 'would delete' : 'deleted'} ${builds.length - 1} other builds (${mb(freed)})`);
