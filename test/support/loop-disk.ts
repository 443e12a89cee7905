/**
 * A small ext4 filesystem on a loop device (the tests run as root), for the faults a tmpfs cannot show:
 * `abort` turns it read-only at once under the files the agent holds open (ext4's `remount,abort`, as a
 * filesystem that met an I/O error and was remounted read-only), so every later write and sync fails.
 *
 *   const disk = mountLoopDisk(64);                 // MiB; a string saying why when it cannot be made
 *   const dataDir = join(disk.dir, 'data');
 *   disk.abort(); ...writes fail...; disk.unmount();  // unmount once the agent is gone
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface LoopDisk {
  /** Where the filesystem is mounted. */
  dir: string;
  /** Makes the filesystem read-only at once, open files included. */
  abort(): void;
  /** Unmounts it (its loop device is freed with it) and removes its image. */
  unmount(): void;
}

const run = (command: string, args: string[]) => execFileSync(command, args, { stdio: 'pipe' });

/** Makes and mounts an ext4 filesystem of `sizeMiB` in an image file; a string saying why when it cannot. */
export function mountLoopDisk(sizeMiB: number): LoopDisk | string {
  const base = mkdtempSync(join(tmpdir(), 'roster-ext4-'));
  const image = join(base, 'disk.img');
  const dir = join(base, 'mnt');
  try {
    mkdirSync(dir);
    run('truncate', ['-s', `${sizeMiB}M`, image]);
    run('mkfs.ext4', ['-q', '-F', '-m', '0', image]);
    run('mount', ['-o', 'loop', image, dir]);
  } catch (err) {
    rmSync(base, { recursive: true, force: true });
    const why = (err as { stderr?: Buffer }).stderr?.toString().trim() || (err as Error).message;
    return `cannot mount an ext4 loop device (${why})`;
  }
  return {
    dir,
    abort: () => { run('mount', ['-o', 'remount,abort', dir]); },
    unmount: () => {
      run('umount', ['-l', dir]);
      rmSync(base, { recursive: true, force: true });
    },
  };
}
