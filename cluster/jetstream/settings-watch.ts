/**
 * The stream's settings changed on the nats-servers while the nodes run (`nats stream edit ROSTER_LOG`):
 * each node compares them, at every look at the stream's leadership (every 2 s), with what the log needs,
 * as it does at start (adoptStream), and says once at warn level what changed and what it does to the log;
 * a setting put back is said at info level. Nothing is changed on the servers: the operator changed it.
 */
import type { StreamInfo } from '@nats-io/jetstream';
import type { Logger } from '../../src/ports/index.ts';
import { adoptStream, type StreamPlan } from './setup.ts';

const removesMessages = 'JetStream removes messages by itself (a snapshot is saved each time the start passes the last one)';

/** What each difference from the log's needs does to it, as the warning says. */
const effects: Record<string, string> = {
  storage: 'the log is kept in memory: a restart of the servers loses it',
  replicas: 'another number of copies of every write than the nodes were started with',
  duplicateWindowNs: 'a publish retried after a lost answer may be stored twice',
  denyPurge: 'compaction cannot purge the stream, which grows for ever',
  maxMsgs: removesMessages,
  maxBytes: removesMessages,
  maxAgeNs: removesMessages,
  subject: 'writes cannot be stored: the stream no longer takes the log\'s subject',
};

/** The differences from the log's needs in `info`, as adoptStream names them (a missing subject included). */
export function settingsDiffer(info: StreamInfo, plan: StreamPlan): Record<string, unknown> {
  try {
    return adoptStream(info, plan).differs;
  } catch {
    // No subject the log can use: that, and whatever else differs.
    const rest = adoptStream({ ...info, config: { ...info.config, subjects: [plan.subject] } }, plan).differs;
    return { ...rest, subject: info.config.subjects };
  }
}

/** Returns what LeadershipWatch calls with each stream info; `atStart` holds the differences already said at start. */
export function watchSettings(plan: StreamPlan, logger: Logger, atStart: Record<string, unknown>): (info: StreamInfo) => void {
  let said = atStart;
  return (info) => {
    const now = settingsDiffer(info, plan);
    const changed = Object.fromEntries(Object.entries(now).filter(([k, v]) => JSON.stringify(said[k]) !== JSON.stringify(v)));
    const restored = Object.keys(said).filter((k) => !(k in now));
    said = now;
    if (Object.keys(changed).length > 0) {
      logger.warn({ stream: plan.stream, changed, effects: [...new Set(Object.keys(changed).map((k) => effects[k] ?? k))] },
        'JetStream log: the stream\'s settings were changed on the nats-servers while the nodes run; put them back with `nats stream edit` (docs/cluster.md)');
    }
    if (restored.length > 0) logger.info({ stream: plan.stream, restored }, 'JetStream log: the stream\'s settings are back to what the log needs');
  };
}
