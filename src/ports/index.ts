export type { ReplicatedLog, LogEntry, Proposal, Snapshot, EntriesListener, Leadership, LogStatus, StreamStatus, StreamReplica, NodeProgress } from './log.ts';
export {
  damagedError, entryTooLargeError, failedError, isEntryTooLarge, isLogDamaged, isLogFailed, isLogOverloaded, isLogUnavailable, isOutcomeUnknown, isWriteTimedOut, logDamagedCode, logFailedCode,
  logOverloadedCode, logUnavailableCode, outcomeUnknownError, overloadedError, unavailableError, writeTimedOutError,
} from './log-errors.ts';
export { foreignLogError, isLogForeign, logForeignCode, type ForeignLog } from './log-errors.ts';
export type { Clock, TimerHandle } from './clock.ts';
export { intervalMs, SystemClock, ManualClock } from './clock.ts';
export type { Probe, ProbeFactory, ProbeResult } from './probe.ts';
export type { Member, MemberStatus, Membership, MembershipListener } from './membership.ts';
export { MembershipSlot, ownersAmong, StaticMembership } from './membership.ts';
export type { AppliedView, HttpObserver, LogObserver, ObservedEntry, RuntimeObserver } from './observer.ts';
export type { Logger } from './logger.ts';
export { silentLogger } from './logger.ts';
export type { Random } from './random.ts';
export { systemRandom } from './random.ts';
