/**
 * The log's errors in the error catalogue (errors.ts spreads it in): a write the log refuses for now — it
 * is overloaded, or cannot store writes (a full disk, descriptors short, its data dir removed or unusable,
 * a cluster's stream deleted or its storage full) —, a log failed for good, a write not confirmed in time,
 * and a snapshot save whose barrier write the log refuses.
 */
import { entry } from './error-kinds.ts';

const retryAfter = (seconds: number): [string, string][] => [['Retry-After', String(seconds)]];

/** A 503 asking to retry in a second. */
const busy = (message: string, consulText: string) => entry({
  kind: 'remoteUnavailable', message, details: () => ({ retryAfterSeconds: 1 }), status: 503, consulStatus: 503, consulText, headers: () => retryAfter(1),
});

export const logErrorCatalogue = {
  logOverloaded: busy('the log is overloaded; retry shortly', 'log overloaded'),
  diskFull: busy('the agent cannot store writes now: no space left on its disk; retry later', 'cannot store writes now: no space left on disk'),
  dataDirUnusable: busy('the agent cannot store writes now: it cannot use its data dir (see the agent\'s log for the path and what to mend); retry later',
    'cannot store writes now: data dir unusable'),
  dataDirRemoved: busy('the agent cannot store writes now: its data dir was removed or moved and it is writing its state there afresh; retry shortly', 'cannot store writes now: data dir removed'),
  // No Retry-After: time does not bring a deleted stream back.
  logStreamGone: entry({
    kind: 'remoteUnavailable', status: 503, consulStatus: 503, consulText: 'cannot store writes now: log stream deleted',
    message: 'the agent cannot store writes now: the cluster\'s JetStream stream was deleted on the nats-servers; reads answer from the state this node holds (see the agent\'s log)',
  }),
  logStorageFull: busy('the agent cannot store writes now: the cluster\'s nats-servers have no JetStream storage left for its log; retry later',
    'cannot store writes now: JetStream storage full'),
  descriptorsShort: busy('the agent cannot store writes now: it is out of file descriptors; retry later', 'cannot store writes now: out of file descriptors'),
  logFailed: entry({ kind: 'unknown', message: 'internal error: the agent\'s log has failed and accepts no writes; see the agent\'s log, then restart it' }),
  // No Retry-After: the write may still take effect, so a blind retry could apply it twice; read it back first.
  writeTimedOut: entry<{ timeoutMs: number }>({
    kind: 'remoteUnavailable', status: 503, consulStatus: 500,
    message: (v) => `the write was not confirmed within ${v.timeoutMs} ms (write_timeout): it may still take effect; read it back before retrying`,
    details: (v) => ({ timeoutMs: v.timeoutMs, outcome: 'unknown' }), consulText: 'timed out enqueuing operation',
  }),
  // A snapshot save's barrier is a write: refused as writes are (`refusal`: that 503, rendered), it says that
  // `?stale` saves without it.
  snapshotBarrierRefused: entry<{ refusal: { message: string; consulText: string; details?: Record<string, unknown>; headers: [string, string][] } }>({
    kind: 'remoteUnavailable', status: 503, consulStatus: 503, headers: (v) => v.refusal.headers,
    message: (v) => `${v.refusal.message}, or save the snapshot without the write it starts with (its barrier) with ?stale `
      + '(roster snapshot save --stale): this node\'s state as it is (in a cluster it may lag writes acknowledged through other nodes)',
    details: (v) => ({ ...v.refusal.details, stale: 'saves without the barrier write' }),
    consulText: (v) => `${v.refusal.consulText}; use ?stale to save a snapshot without its barrier write`,
  }),
};
