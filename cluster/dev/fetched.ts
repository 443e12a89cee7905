/**
 * Files fetched once into the checkout's `.cache/` (not tracked) from the registries this machine reaches:
 * Debian 13's packages from Debian's archive, each checked against the archive's SHA-256. The tests use
 * them for Node.js on Debian 13's glibc (test/support/node-dist.ts), and tests, benchmarks and the local
 * cluster for Debian 13's nats-server, the release line that replays a purge safely after a crash (the
 * stream's compaction needs it; Debian 12's 2.9.10 does not). A fetch goes to a temporary directory
 * first and is renamed into place, so parallel users never see half a download.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout's `.cache/`. */
export const cacheDir = join(fileURLToPath(new URL('../..', import.meta.url)), '.cache');

/** Fills `target` by running `fill(tmp)` on a fresh temporary sibling and renaming it into place. */
export function fetchOnce(target: string, fill: (tmp: string) => void): string {
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

const debianMirror = 'http://deb.debian.org/debian';
const debianSuite = 'trixie';


/** A package's entry in the suite's index: its file name, version and SHA-256. */
function packageEntry(pkg: string): { filename: string; version: string; sha256: string } {
  const index = execFileSync('sh', ['-c', `curl -fsS --max-time 120 ${debianMirror}/dists/${debianSuite}/main/binary-amd64/Packages.xz | xz -d`],
    { encoding: 'utf8', maxBuffer: 512 * 1024 * 1024, timeout: 180_000 });
  const stanza = index.split('\n\n').find((s) => s.startsWith(`Package: ${pkg}\n`));
  const field = (name: string) => stanza?.match(new RegExp(`^${name}: (.+)$`, 'm'))?.[1];
  const filename = field('Filename');
  const version = field('Version');
  const sha256 = field('SHA256');
  if (!filename || !version || !sha256) throw new Error(`no ${pkg} entry in Debian ${debianSuite}'s package index`);
  return { filename, version, sha256 };
}

/** Debian 13's package `pkg`, its SHA-256 checked against the index, unpacked under .cache/<pkg>-trixie/root on first use. */
export function debianPackage(pkg: string): string {
  return join(fetchOnce(join(cacheDir, `${pkg}-${debianSuite}`), (tmp) => {
    const entry = packageEntry(pkg);
    const deb = join(tmp, `${pkg}.deb`);
    execFileSync('curl', ['-fsS', '--max-time', '300', '-o', deb, `${debianMirror}/${entry.filename}`], { timeout: 320_000 });
    const sum = createHash('sha256').update(readFileSync(deb)).digest('hex');
    if (sum !== entry.sha256) throw new Error(`${entry.filename}: SHA-256 ${sum}, the index says ${entry.sha256}`);
    execFileSync('dpkg-deb', ['-x', deb, join(tmp, 'root')], { timeout: 120_000 });
    rmSync(deb);
  }), 'root');
}

/**
 * Debian 13's nats-server (2.10.27 when written; a static Go binary, so it runs here): the release line
 * that replays a purge safely after a crash, which the stream's compaction needs (2.9.10, this host's,
 * does not). Returns the binary's path; give it to the tests' nats-servers as ROSTER_NATS_SERVER.
 */
export function debianNatsServer(): string {
  return join(debianPackage('nats-server'), 'usr/sbin/nats-server');
}

