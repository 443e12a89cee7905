/**
 * Whether this node can use the stream (src/log/reach.ts judges it): the answers are the PubAcks of its
 * commits, the messages its consumer delivers, and the stream's leader answering the leadership watch's
 * question every 2 s (a copy that answers without a leader, during an election or cut off from the quorum,
 * does not count). A node cut off from every nats-server, or whose server lost the quorum, gets none of
 * them; an idle node in a healthy cluster still gets the leader's answers.
 *
 * The runtime tells gossip (ReplicatedLog.onReachable): the other members stop counting this node among
 * the owners of session timers and failure reports, and take over what it owned, until it can again.
 */
import type { StreamInfo } from '@nats-io/jetstream';
import { intervalMs, type Logger } from '../../src/ports/index.ts';
import { LogReach, WritableListeners } from '../../src/log/index.ts';
import { leadershipPollMs } from './leadership.ts';

/** How often the silence is judged: a small part of the shortest bound. */
const lookEveryMs = 250;
/** The shortest silence judged a cut: three of the leadership watch's questions unanswered. */
export const unreachableAfterMsMin = 3 * leadershipPollMs;
/** A node that lost the log counts again once it answered for twice the silence that lost it (see reach.ts). */
const backAfterFactor = 2;

export class ReachWatch {
  private readonly reach: LogReach;
  private readonly listeners = new WritableListeners();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly stream: string, private readonly logger: Logger, private readonly unreachableAfterMs: number) {
    this.reach = new LogReach({ unreachableAfterMs, backAfterMs: backAfterFactor * unreachableAfterMs }, intervalMs());
  }

  /** A commit acknowledged or a message delivered. */
  answered(): void {
    this.reach.answered(intervalMs());
  }

  /**
   * The leadership watch's listener: `seen`, after each answer is taken as the stream's when its leader
   * gave it (or a stream without a cluster, on a single server).
   */
  answering(seen: (info: StreamInfo) => void): (info: StreamInfo) => void {
    return (info) => {
      const cluster = info.cluster;
      if (cluster === undefined || (cluster.leader !== undefined && cluster.leader !== '')) this.answered();
      seen(info);
    };
  }

  onChange(listener: (reachable: boolean) => void): void {
    this.listeners.add(listener);
  }

  /** Judges from now on (the log opened: it answered just now). */
  start(): void {
    this.answered();
    this.timer ??= setInterval(() => this.look(), lookEveryMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private look(): void {
    const changed = this.reach.look(intervalMs());
    if (changed === undefined) return;
    if (changed) {
      this.logger.info({ stream: this.stream }, 'JetStream log: the stream answers this node again; the other members count it among the owners of timers again');
    } else {
      this.logger.warn({ stream: this.stream, silentMs: this.unreachableAfterMs },
        `JetStream log: no answer from the stream for ${this.unreachableAfterMs} ms (no commit acknowledged, no message delivered, `
        + 'no answer from its leader): this node is cut off from the nats-servers, or they from their quorum; the other members '
        + 'take over its session timers and failure reports until it answers again');
    }
    this.listeners.tell(changed);
  }
}
