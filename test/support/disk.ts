/**
 * A small disk that tests can fill and free: a tmpfs mounted on a fresh directory (the tests run as
 * root). `fill` writes a filler file until the filesystem refuses another byte (ENOSPC); `free` removes
 * it. Anything written to the mount afterwards (a WAL commit, a snapshot) gets ENOSPC until `free`.
 *
 *   const disk = mountSmallDisk(16 * 1024);        // KiB; undefined + a reason when mounting is impossible
 *   const dataDir = join(disk.dir, 'data');         // the agent's --data-dir
 *   disk.fill(); ...writes answer 503...; disk.free(); ...writes succeed again...
 *   disk.unmount();                                 // in afterAll
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmdirSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SmallDisk {
  /** Where the tmpfs is mounted. */
  dir: string;
  /** Fills the disk to the last byte with `<dir>/filler`; returns the bytes written. Idempotent until `free`. */
  fill(): number;
  /** Removes the filler. */
  free(): void;
  /** Frees and unmounts (lazily, should a process still hold a file there) and removes the mount point. */
  unmount(): void;
}

/** Mounts a tmpfs of `sizeKiB`; a string saying why when it cannot (not root, no mount in a container). */
export function mountSmallDisk(sizeKiB: number): SmallDisk | string {
  const dir = mkdtempSync(join(tmpdir(), 'roster-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKiB}k`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmdirSync(dir);
    const why = (err as { stderr?: Buffer }).stderr?.toString().trim() || (err as Error).message;
    return `cannot mount a tmpfs (${why})`;
  }
  const filler = join(dir, 'filler');
  return {
    dir,
    fill: () => fillUp(filler),
    free: () => rmSync(filler, { force: true }),
    unmount: () => {
      rmSync(filler, { force: true });
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      rmdirSync(dir);
    },
  };
}

/** Appends to `path` in shrinking chunks until not even one byte more fits. Bounded: at most 64 chunk sizes. */
function fillUp(path: string): number {
  const fd = openSync(path, 'a');
  let written = 0;
  try {
    for (let chunk = 1 << 20; chunk >= 1; chunk >>= 1) {
      const buf = Buffer.alloc(chunk, 0x58);
      for (;;) {
        try {
          written += writeSync(fd, buf);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return written;
}
