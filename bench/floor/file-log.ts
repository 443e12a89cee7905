/**
 * The single-node floor's log: a group commit into a file. While one commit is on its way to the disk
 * the next entries queue, then go out together as one frame (Roster's WAL frame, `[u32 length][u32
 * crc32][JSON entries]`) written in place into a file kept zero-filled ahead, and one fdatasync; the
 * entries are applied in order once durable. The file is reused from its start when full: no state is
 * ever read back from it.
 */
import { fdatasyncSync, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { encodeFrame } from '../../src/wal/record.ts';
import type { Entry } from './locks.ts';
import type { FloorLog } from './node.ts';

/** The file's size, zero-filled and synced once at start, so no fdatasync journals a size change. */
const logBytes = 64 * 1024 * 1024;

export class FileLog implements FloorLog {
  private queued: Entry[] = [];
  private committing = false;
  private position = 0;

  private constructor(
    private readonly file: FileHandle,
    private readonly apply: (e: Entry) => void,
    private readonly fatal: (err: unknown) => void,
  ) {}

  static async open(path: string, apply: (e: Entry) => void, fatal: (err: unknown) => void): Promise<FileLog> {
    const file = await open(path, 'w+');
    await file.write(Buffer.alloc(logBytes), 0, logBytes, 0);
    fdatasyncSync(file.fd);
    return new FileLog(file, apply, fatal);
  }

  append(entry: Entry): void {
    this.queued.push(entry);
    if (!this.committing) void this.commit().catch(this.fatal);
  }

  close(): Promise<void> {
    return this.file.close();
  }

  /** Commits everything queued, one frame and one fdatasync per round, until nothing is left. */
  private async commit(): Promise<void> {
    this.committing = true;
    while (this.queued.length > 0) {
      const batch = this.queued;
      this.queued = [];
      const frame = encodeFrame(JSON.stringify(batch));
      if (this.position + frame.length > logBytes) this.position = 0;
      writeSync(this.file.fd, frame, 0, frame.length, this.position);
      this.position += frame.length;
      await this.file.datasync();
      for (const e of batch) this.apply(e);
    }
    this.committing = false;
  }
}
