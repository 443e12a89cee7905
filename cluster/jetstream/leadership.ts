/**
 * The stream's leadership and copies as last asked: who leads, who holds copies and how far behind
 * each is, how fresh. Asked in the background every few seconds and read synchronously (for
 * /v1/status, /v1/operator/log and the index headers), so those answers never wait on the server.
 */
import type { StreamInfo } from '@nats-io/jetstream';
import type { Leadership, StreamReplica } from '../../src/ports/index.ts';

/** How often the stream's leadership is asked. */
export const leadershipPollMs = 2_000;
/** Unanswered leadership requests in a row after which the leader is taken as unknown. */
export const leadershipFailuresMax = 3;

/** The stream's copies and sequence range as last asked (see StreamStatus). */
export interface StreamSeen {
  replicas: StreamReplica[];
  firstSeq: number;
  lastSeq: number;
  messages: number;
  /** The interval clock's ms (performance.now()) of the last answered request. */
  askedAtMs: number;
}

export class LeadershipWatch {
  private seen: Leadership = { leader: undefined, peers: [], lastContactMs: 0 };
  private stream: StreamSeen = { replicas: [], firstSeq: 0, lastSeq: 0, messages: 0, askedAtMs: 0 };
  private timer: NodeJS.Timeout | undefined;

  current(): Leadership {
    return this.seen;
  }

  /** The copies and sequence range of the stream as last asked. */
  streamSeen(): StreamSeen {
    return this.stream;
  }

  /** Records `first`, then asks `info` every `leadershipPollMs` until stop(); `seen` is given each answer. */
  start(info: () => Promise<StreamInfo>, first: StreamInfo, seen?: (info: StreamInfo) => void): void {
    this.record(first);
    let failures = 0;
    this.timer = setInterval(() => {
      info().then((i) => { failures = 0; this.record(i); seen?.(i); }, () => {
        // One unanswered request under load is not an election: forget the leader only when it lasts.
        failures++;
        const leader = failures >= leadershipFailuresMax ? undefined : this.seen.leader;
        this.seen = { ...this.seen, leader, lastContactMs: this.seen.lastContactMs + leadershipPollMs };
      });
    }, leadershipPollMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private record(info: StreamInfo): void {
    const cluster = info.cluster;
    const leader = cluster?.leader;
    const others = cluster?.replicas ?? [];
    this.seen = {
      leader,
      peers: [...(leader ? [leader] : []), ...others.map((r) => r.name)].sort(),
      lastContactMs: leader === undefined ? this.seen.lastContactMs + leadershipPollMs : 0,
    };
    const replicas: StreamReplica[] = others.map((r) => ({
      name: r.name, leader: false, current: r.current, activeMs: Math.round((r.active ?? 0) / 1e6), lagMessages: r.lag ?? 0,
    }));
    if (leader) replicas.push({ name: leader, leader: true, current: true, activeMs: 0, lagMessages: 0 });
    replicas.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    // Read defensively: the sequence range is for display only and must never break the leadership.
    const state: Partial<StreamInfo['state']> = info.state ?? {};
    this.stream = { replicas, firstSeq: state.first_seq ?? 0, lastSeq: state.last_seq ?? 0, messages: state.messages ?? 0, askedAtMs: performance.now() };
  }
}
