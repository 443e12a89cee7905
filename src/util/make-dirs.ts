/**
 * `mkdir -p`: makes a directory and every missing one above it, each with its own mkdir, from the top
 * down. Node 20's `mkdirSync(path, { recursive: true })` never returns on a filesystem whose mkdir answers
 * ENOENT under a parent that exists (`--data-dir /proc/x` hung the start with nothing printed); here that
 * mkdir's error is thrown.
 */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export function makeDirs(dir: string): void {
  const path = resolve(dir);
  const missing: string[] = [];
  for (let p = path; !existsSync(p); p = dirname(p)) {
    missing.push(p);
    if (dirname(p) === p) break;
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d);
    } catch (err) {
      // Made meanwhile by someone else (two agents starting on one new data dir): as good as made here.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  if (!statSync(path).isDirectory()) throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${path}'`), { code: 'ENOTDIR' });
}
