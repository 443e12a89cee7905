/**
 * The record of a clean close: `<dir>/snap/closed` names the index the log was closed at, written only
 * when a snapshot at that index holds every entry (the shutdown snapshot), and removed at the next open
 * before the log takes an append. While it is there, nothing after that index was ever acknowledged, so
 * recovery may start from the snapshot whatever became of the segments (see recovery.ts): damaged,
 * emptied or removed while the agent was stopped, or cut short while it ran in a way it could not see.
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { syncDir, writeFileWhole } from './files.ts';

const fileName = 'closed';

/** Records, durably, that the log closed at `index` with a snapshot at `index`. */
export async function recordCleanClose(snapDir: string, index: number): Promise<void> {
  await writeFileWhole(join(snapDir, fileName), `${JSON.stringify({ index })}\n`);
}

/** The index of the clean close recorded, if a well-formed record is there. */
export async function readCleanClose(snapDir: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(join(snapDir, fileName), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const index = (JSON.parse(text) as { index?: unknown }).index;
    return typeof index === 'number' && Number.isSafeInteger(index) && index > 0 ? index : undefined;
  } catch {
    return undefined;
  }
}

/** Removes the record, durably: the log is about to take appends past the index it names. */
export async function clearCleanClose(snapDir: string): Promise<void> {
  const path = join(snapDir, fileName);
  try {
    await rm(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  await syncDir(snapDir);
}
