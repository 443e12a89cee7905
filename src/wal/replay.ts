/** Replay: the stored entries after a consumer's index, read back from the segments in bounded batches. */
import type { EntriesListener, LogEntry } from '../ports/log.ts';
import { parseCommit, replayBatchEntriesMax } from '../log/index.ts';
import { kind, type SegmentRef } from './files.ts';
import { RecordFile } from './record.ts';
import { corrupt } from './scan.ts';

/** Streams entries (afterIndex, upTo] from disk to the listener in bounded batches. */
export function replay(segments: SegmentRef[], afterIndex: number, upTo: number, listener: EntriesListener): void {
  if (afterIndex >= upTo) return;
  const start = segments.findLastIndex((s) => s.first <= afterIndex + 1);
  if (start < 0) {
    throw new RangeError(`${kind}.subscribe: entries after ${afterIndex} were compacted; `
      + `the oldest segment starts at ${segments[0]?.first}`);
  }
  let expected = afterIndex + 1;
  let batch: LogEntry[] = [];
  for (const seg of segments.slice(start)) {
    for (const entry of readEntries(seg, upTo)) {
      if (entry.index < expected) continue;
      if (entry.index !== expected) throw new Error(`${kind}.subscribe: ${seg.path} skips from ${expected} to ${entry.index}`);
      batch.push(entry);
      expected += 1;
      if (batch.length === replayBatchEntriesMax) {
        listener(batch);
        batch = [];
      }
    }
  }
  if (batch.length > 0) listener(batch);
  if (expected !== upTo + 1) throw new Error(`${kind}.subscribe: replay stopped at ${expected - 1}, not ${upTo}`);
}

/**
 * Entries of one segment up to `upTo`, commit by commit. Stops at the commit that reaches `upTo`:
 * later bytes may be a commit in flight, neither synced nor acknowledged.
 */
function* readEntries(seg: SegmentRef, upTo: number): Generator<LogEntry> {
  const file = new RecordFile(seg.path);
  try {
    let offset = 0;
    for (let next = seg.first; next <= upTo;) {
      const frame = file.at(offset);
      if (frame === undefined) return;
      if (!frame.ok) throw corrupt(seg.path, offset, next, frame.reason);
      const entries = parseCommit(frame.payload, next);
      if (typeof entries === 'string') throw corrupt(seg.path, offset, next, entries);
      for (const entry of entries) {
        if (entry.index > upTo) return;
        yield entry;
      }
      next += entries.length;
      offset = frame.end;
    }
  } finally {
    file.close();
  }
}
