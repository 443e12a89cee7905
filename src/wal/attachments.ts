/**
 * Bytes too large for one log entry, kept next to the WAL (`<dir>/attachments/<sha256>.bin`) so that an
 * entry names them instead of carrying them: a restore of a large snapshot. Stored whole before the entry
 * that names them is proposed (temporary file, fsync, rename, directory sync), read back synchronously
 * when that entry applies, live or in a replay. The newest `keptMax` are kept: an attachment is needed
 * only until the log snapshots taken after its entry (the next ones) replace that entry.
 */
import fs from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileWhole } from './files.ts';

const namePattern = /^[0-9a-f]{64}\.bin$/;
/** Attachments kept; older ones are removed when a new one is stored. */
const keptMax = 3;

export class Attachments {
  private readonly dir: string;

  constructor(dataDir: string) {
    this.dir = join(dataDir, 'attachments');
  }

  /** Stores `bytes` durably under their SHA-256 (hex); resolves with the name an entry carries. */
  async store(bytes: Buffer, sha256: string): Promise<string> {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new RangeError(`attachment: bad sha256 ${JSON.stringify(sha256)}`);
    await mkdir(this.dir, { recursive: true });
    const name = `${sha256}.bin`;
    await writeFileWhole(join(this.dir, name), bytes);
    await this.prune(name);
    return name;
  }

  /** The bytes stored under `name`; throws when they are not there. */
  load(name: string): Buffer {
    if (!namePattern.test(name)) throw new RangeError(`attachment: bad name ${JSON.stringify(name)}`);
    return fs.readFileSync(join(this.dir, name));
  }

  /** Removes all but the newest keptMax attachments (the one just stored among them). */
  private async prune(keep: string): Promise<void> {
    const names = (await readdir(this.dir)).filter((n) => namePattern.test(n) && n !== keep);
    const dated = await Promise.all(names.map(async (n) => ({ n, ms: (await stat(join(this.dir, n))).mtimeMs })));
    dated.sort((a, b) => b.ms - a.ms);
    for (const { n } of dated.slice(keptMax - 1)) await rm(join(this.dir, n), { force: true });
  }
}
