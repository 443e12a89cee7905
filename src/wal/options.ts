/** The options of the embedded WAL (wal.ts). */
import type { Clock } from '../ports/clock.ts';
import type { Logger } from '../ports/logger.ts';
import type { LogObserver } from '../ports/observer.ts';

export interface WalLogOptions {
  /** Data directory; `wal/` and `snap/` are created in it (recursively) on open. */
  dir: string;
  clock: Clock;
  /** Roll to a new segment file, between commits, once the current one has reached this size. @default 64 MiB */
  segmentBytesMax?: number;
  /** Most entries in one commit (one frame, one write + one fdatasync); more wait for the next. @default 4096 */
  batchEntriesMax?: number;
  /**
   * Most payload bytes in one commit, counted by the entries' size bounds; more wait for the next.
   * At most 64 MiB, the largest commit frame; an append needing more than that is refused. @default 16 MiB
   */
  batchBytesMax?: number;
  /**
   * Most entries waiting for the next commit while one is in flight. An append that would pass it is
   * rejected at once with an error whose `code` is 'LOG_OVERLOADED' (see `isLogOverloaded`); one
   * larger than it with a RangeError. @default 65536
   */
  queuedEntriesMax?: number;
  /** Receives recovery warnings (a torn last commit dropped) and write failures. @default silent */
  logger?: Logger;
  /** Told each commit's size and time (metrics); also settable later with `observe`. @default none */
  observer?: LogObserver;
  /**
   * While the disk is full, how often the log tries again to reserve space ahead of its write position;
   * appends are refused (LOG_UNAVAILABLE) until one try succeeds. @default 1000
   */
  spaceRetryMs?: number;
  /** How often the log checks that its current segment is still at its path in the data dir. @default 1000 */
  dirCheckMs?: number;
  /**
   * Called when the data dir is made again after it was removed while the log ran, once the dir exists
   * and before the log writes anything in it: the agent takes its lock again and writes its node ID.
   * Throwing (another agent holds the dir now) fails the log for good. @default nothing
   */
  reclaimDir?: () => Promise<void>;
}
