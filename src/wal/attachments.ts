/**
 * Bytes too large for one log entry, kept next to the WAL (`<dir>/attachments/<sha256>.bin`) so that an
 * entry names them instead of carrying them: a restore of a large snapshot. Stored whole before the entry
 * that names them is proposed (temporary file, fsync, rename, directory sync; the temporary file removed
 * when that fails), read back synchronously
 * when that entry applies, live or in a replay. The newest `keptMax` are kept: an attachment is needed
 * only until the log snapshots taken after its entry (the next ones) replace that entry.
 *
 * An attachment is the snapshot file the restore brought, byte for byte: one removed by hand can be put
 * back from a copy of that file. Recovery checks, before the log opens, that every attachment an entry
 * to replay names is there whole (`check`), so a missing one stops the start with one line naming it.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { damagedError } from '../ports/log-errors.ts';
import { kind, shortageError, shortageOf, writeFileWhole } from './files.ts';

const namePattern = /^[0-9a-f]{64}\.bin$/;
/** Attachments kept; older ones are removed when a new one is stored. */
const keptMax = 3;

export class Attachments {
  private readonly dir: string;

  constructor(dataDir: string) {
    this.dir = join(dataDir, 'attachments');
  }

  /**
   * Stores `bytes` durably under their SHA-256 (hex); resolves with the name an entry carries. A full disk
   * (or a shortage of file descriptors) is refused as the log refuses appends then (shortageError: the
   * restore answers 503, retry later), and leaves no partial file behind.
   */
  async store(bytes: Buffer, sha256: string): Promise<string> {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new RangeError(`attachment: bad sha256 ${JSON.stringify(sha256)}`);
    const name = `${sha256}.bin`;
    try {
      await mkdir(this.dir, { recursive: true });
      await writeFileWhole(join(this.dir, name), bytes);
    } catch (err) {
      const shortage = shortageOf(err);
      throw shortage === undefined ? err : shortageError(shortage);
    }
    await this.prune(name);
    return name;
  }

  /** The bytes stored under `name`; throws, naming the file and what it holds, when they are not there. */
  load(name: string): Buffer {
    if (!namePattern.test(name)) throw new RangeError(`attachment: bad name ${JSON.stringify(name)}`);
    const path = join(this.dir, name);
    try {
      return fs.readFileSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      throw new Error(`${kind}: the attachment ${path} is missing: it holds the snapshot file a restore brought, `
        + `which the entries to apply need (put a copy of that file back there)`);
    }
  }

  /**
   * Refuses to open (LOG_DAMAGED) when an attachment that `named` entries need is missing, or is not the
   * file they name (its SHA-256 differs): the restore could not be applied, nor anything after it. Reads
   * each one through once, in pieces.
   */
  async check(named: readonly { index: number; name: string; sha256: string }[], otherwise: string): Promise<void> {
    for (const { index, name, sha256 } of named) {
      const path = join(this.dir, name);
      const found = namePattern.test(name) ? await sha256Of(path) : undefined;
      if (found === sha256) continue;
      const what = found === undefined ? 'is missing' : `is damaged (its sha256 is ${found})`;
      throw damagedError(`${kind}: the attachment ${path} ${what}: it holds the snapshot file restored at index ${index} `
        + `(sha256 ${sha256}), which that entry and every later one need; refusing to open. Put a copy of the snapshot file `
        + `restored then back at ${path} (a file whose sha256 is ${sha256}); or ${otherwise}`);
    }
  }

  /** Removes all but the newest keptMax attachments (the one just stored among them). */
  private async prune(keep: string): Promise<void> {
    const names = (await readdir(this.dir)).filter((n) => namePattern.test(n) && n !== keep);
    const dated = await Promise.all(names.map(async (n) => ({ n, ms: (await stat(join(this.dir, n))).mtimeMs })));
    dated.sort((a, b) => b.ms - a.ms);
    for (const { n } of dated.slice(keptMax - 1)) await rm(join(this.dir, n), { force: true });
  }
}

/** The SHA-256 (hex) of the file at `path`, or undefined when there is none. */
async function sha256Of(path: string): Promise<string | undefined> {
  const hash = createHash('sha256');
  try {
    for await (const chunk of fs.createReadStream(path)) hash.update(chunk as Buffer);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'EISDIR') return undefined;
    throw err;
  }
  return hash.digest('hex');
}
