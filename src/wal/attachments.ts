/**
 * Bytes too large for one log entry, kept next to the WAL (`<dir>/attachments/<sha256>.bin`) so that an
 * entry names them instead of carrying them: a restore of a large snapshot. Stored whole before the entry
 * that names them is proposed (temporary file, fsync, rename, directory sync; the temporary file removed
 * when that fails), read back synchronously when that entry applies, live or in a replay.
 *
 * An attachment is removed only once no start could replay an entry naming it: every entry naming it is at
 * or below the fallback snapshot (the older of the two snapshots kept, which a start uses when the newest
 * is unreadable; see snapshots.ts), so both snapshots a start may use hold its state. Until then it stays,
 * however many restores came after it. One stored for an entry not yet committed stays too; one whose entry
 * was never committed (the append refused, or a crash before it) is named by no entry, and goes at the next
 * removal after this process's start (at open, or after a snapshot or another attachment is stored).
 *
 * An attachment is the snapshot file the restore brought, byte for byte: one removed by hand can be put
 * back from a copy of that file. Recovery checks, before the log opens, that every attachment an entry
 * to replay names is there whole (`check`), so a missing one stops the start with one line naming it.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { damagedError } from '../ports/log-errors.ts';
import type { LogEntry } from '../ports/log.ts';
import type { Logger } from '../ports/logger.ts';
import type { NamedAttachment } from './scan.ts';
import { kind, shortageError, shortageOf, writeFileWhole } from './files.ts';

const namePattern = /^[0-9a-f]{64}\.bin$/;

export class Attachments {
  private readonly dir: string;
  /** For each attachment an entry of the log names, the highest index of an entry naming it. */
  private readonly named = new Map<string, number>();
  /** Attachments stored for entries not committed yet, with how many such entries each waits for. */
  private readonly pending = new Map<string, number>();
  /** Entries up to this index are never replayed: both snapshots a start may use hold them. */
  private coveredIndex = 0;

  constructor(dataDir: string, private readonly logger: Logger) {
    this.dir = join(dataDir, 'attachments');
  }

  /** Notes the attachments that committed entries name. */
  committed(entries: readonly Pick<LogEntry, 'index' | 'cmd'>[]): void {
    for (const { index, cmd } of entries) {
      if (cmd.t !== 'state.restore' || cmd.attachment === undefined) continue;
      this.note(index, cmd.attachment.name);
      this.unwait(cmd.attachment.name);
    }
  }

  /**
   * Entries up to `index` are never replayed again (it is the fallback snapshot's index): removes the
   * attachments that only such entries name. Best effort: one that cannot be removed is tried again later.
   */
  async covered(index: number): Promise<void> {
    this.coveredIndex = Math.max(this.coveredIndex, index);
    await this.prune();
  }

  /**
   * Stores `bytes` durably under their SHA-256 (hex); resolves with the name an entry carries. A full disk
   * (or a shortage of file descriptors) is refused as the log refuses appends then (shortageError: the
   * restore answers 503, retry later), and leaves no partial file behind.
   */
  async store(bytes: Buffer, sha256: string): Promise<string> {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new RangeError(`attachment: bad sha256 ${JSON.stringify(sha256)}`);
    const name = `${sha256}.bin`;
    // Kept from before its file exists: a removal running meanwhile must not take it.
    this.pending.set(name, (this.pending.get(name) ?? 0) + 1);
    try {
      await mkdir(this.dir, { recursive: true });
      await writeFileWhole(join(this.dir, name), bytes);
    } catch (err) {
      this.unwait(name);
      const shortage = shortageOf(err);
      throw shortage === undefined ? err : shortageError(shortage);
    }
    await this.prune();
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
   * At open: notes the attachments that the entries of the log (`named`) name, and refuses to open
   * (LOG_DAMAGED) when one that an entry after the snapshot at `snapIndex` names, an entry to replay, is
   * missing, or is not the file it names (its SHA-256 differs): the restore could not be applied, nor
   * anything after it. Reads each of those through once, in pieces.
   */
  async check(named: readonly NamedAttachment[], snapIndex: number, otherwise: string): Promise<void> {
    for (const { index, name } of named) this.note(index, name);
    for (const { index, name, sha256 } of named.filter((a) => a.index > snapIndex)) {
      const path = join(this.dir, name);
      const found = namePattern.test(name) ? await sha256Of(path) : undefined;
      if (found === sha256) continue;
      const what = found === undefined ? 'is missing' : `is damaged (its sha256 is ${found})`;
      throw damagedError(`${kind}: the attachment ${path} ${what}: it holds the snapshot file restored at index ${index} `
        + `(sha256 ${sha256}), which that entry and every later one need; refusing to open. Put a copy of the snapshot file `
        + `restored then back at ${path} (a file whose sha256 is ${sha256}); or ${otherwise}`);
    }
  }

  private note(index: number, name: string): void {
    this.named.set(name, Math.max(index, this.named.get(name) ?? 0));
  }

  /** One entry fewer waits for `name` (it committed, or its attachment could not be stored). */
  private unwait(name: string): void {
    const waiting = this.pending.get(name) ?? 0;
    if (waiting > 1) this.pending.set(name, waiting - 1);
    else this.pending.delete(name);
  }

  /** Removes the attachments no entry a start may replay names, and none waits for; best effort. */
  async prune(): Promise<void> {
    try {
      for (const n of (await readdir(this.dir).catch(() => [])).filter((f) => namePattern.test(f))) {
        // Decided just before each removal: an entry may have committed, or a store begun, meanwhile.
        if (this.pending.has(n) || (this.named.get(n) ?? 0) > this.coveredIndex) continue;
        this.named.delete(n);
        await rm(join(this.dir, n), { force: true });
      }
    } catch (err) {
      this.logger.warn({ err, dir: this.dir }, 'WAL: could not remove an unneeded attachment; tried again later');
    }
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
