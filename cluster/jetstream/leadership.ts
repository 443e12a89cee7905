/**
 * The stream's leadership as last asked: who leads, who holds copies, how fresh. Asked in the
 * background every few seconds and read synchronously (for /v1/status and the index headers).
 */
import type { StreamInfo } from '@nats-io/jetstream';
import type { Leadership } from '../../src/ports/index.ts';

/** How often the stream's leadership is asked. */
export const leadershipPollMs = 2_000;
/** Unanswered leadership requests in a row after which the leader is taken as unknown. */
export const leadershipFailuresMax = 3;

export class LeadershipWatch {
  private seen: Leadership = { leader: undefined, peers: [], lastContactMs: 0 };
  private timer: NodeJS.Timeout | undefined;

  current(): Leadership {
    return this.seen;
  }

  /** Records `first`, then asks `info` every `leadershipPollMs` until stop(). */
  start(info: () => Promise<StreamInfo>, first: StreamInfo): void {
    this.record(first);
    let failures = 0;
    this.timer = setInterval(() => {
      info().then((i) => { failures = 0; this.record(i); }, () => {
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
    const replicas = (cluster?.replicas ?? []).map((r) => r.name);
    const leader = cluster?.leader;
    this.seen = {
      leader,
      peers: [...(leader ? [leader] : []), ...replicas].sort(),
      lastContactMs: leader === undefined ? this.seen.lastContactMs + leadershipPollMs : 0,
    };
  }
}
