/** The history checker: record histories, check them for linearizability, mutual exclusion and fencing. */
export { HistoryRecorder, type Op, type OpHandle, type Outcome } from './history.ts';
export { casRegister, makeMutex, mutex, type Model, type MutexOptions, type MutexState, type RegisterState } from './models.ts';
export { checkLinearizable, formatOp, type CheckOptions, type KeyVerdict, type Report } from './linearizability.ts';
export { checkFencing, ProtectedResource, type FencedWrite, type FencingReport } from './fencing.ts';
export { mutualExclusion, type HoldingInterval, type MutualExclusionReport } from './mutex-intervals.ts';
