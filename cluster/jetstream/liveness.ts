/**
 * Whether the consumer's server is still talking. The client recreates an ordered consumer the server
 * says is gone, but one hosted by a server that died (nats-server 2.9 does not move an R1 consumer)
 * never answers the client's info request, and the client waits on it forever, heartbeat monitor
 * paused. Silence for `consumerSilentHeartbeatsMax` heartbeat intervals means that: the reader then
 * stops the consumer and starts a new one right after its cursor.
 */
import type { ConsumerMessages } from '@nats-io/jetstream';
import { setLongInterval } from '../../src/util/index.ts';

/**
 * Heartbeat intervals without a word from the consumer's server after which the consumer is
 * replaced (its server is likely gone). The client checks on it after two; this is the backstop.
 */
export const consumerSilentHeartbeatsMax = 4;
/** Consumer notifications that only come from a live server. */
const aliveSignals: ReadonlySet<string> = new Set(['heartbeat', 'discard', 'debug', 'flow_control', 'ordered_consumer_recreated']);

export class ConsumerLiveness {
  /** When the server last showed the consumer is alive (a message, a heartbeat, an expired pull): the interval clock's ms. */
  private aliveAtMs = 0;

  /** A sign of life: a message was delivered. */
  alive(): void {
    this.aliveAtMs = performance.now();
  }

  /**
   * Follows the consumer's notifications until it stops: notes every sign of life from the server
   * (heartbeats, expired pulls), and calls `onRecreated` each time the ordered consumer recreated itself.
   */
  async watch(messages: Pick<ConsumerMessages, 'status'>, onRecreated: (consumer: string) => void): Promise<void> {
    for await (const s of messages.status()) {
      if (s.type === 'ordered_consumer_recreated') onRecreated(s.name);
      if (aliveSignals.has(s.type)) this.alive();
    }
  }

  /**
   * Checks every heartbeat interval (half the pull's lifetime); calls `onSilent` each time the server has
   * been silent for `consumerSilentHeartbeatsMax` of them, unless `stopped()`. Returns the stop function.
   */
  watchdog(heartbeatMs: number, stopped: () => boolean, onSilent: (silentMs: number) => void): () => void {
    this.alive();
    const timer = setLongInterval(() => {
      const silentMs = performance.now() - this.aliveAtMs;
      if (stopped() || silentMs < consumerSilentHeartbeatsMax * heartbeatMs) return;
      onSilent(silentMs);
    }, heartbeatMs);
    return () => timer.clear();
  }
}
