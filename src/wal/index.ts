/** The embedded WAL and its in-memory twin; everything else in src/wal is private to this folder. */
export { WalLog } from './wal.ts';
export type { WalLogOptions } from './wal.ts';
export { MemoryLog, createMemoryLogStore } from './memory-log.ts';
export type { MemoryLogOptions, MemoryLogStore } from './memory-log.ts';
export { isEntryTooLarge, isLogDamaged, isLogFailed, isLogOverloaded, isLogUnavailable, isOutcomeUnknown, isWriteTimedOut } from '../ports/log-errors.ts';
export type { LogStats } from '../log/index.ts';
