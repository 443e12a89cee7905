/**
 * Faults planted in a node's runtime for the controls (controls.test.ts): each breaks one promise the
 * queue or check-owner invariants stand for, so a control can show the checker catches it.
 *   - queue-cut-in:    a newcomer to a node's lock queue goes right behind the head, ahead of earlier waiters.
 *   - deaf-queue:      a node's queued waiters are never woken by a change of their key, only by their wait ending.
 *   - lost-reconcile:  a node's check owner ignores applied changes to its checks (it only looks at start).
 */
import type { KvAcquire } from '../../src/domain/commands.ts';
import type { Clock } from '../../src/ports/clock.ts';
import type { Runtime } from '../../src/runtime/index.ts';

export type Plant = 'queue-cut-in' | 'deaf-queue' | 'lost-reconcile';

interface QueueInternals {
  queues: Map<string, unknown[]>;
  enqueue(cmd: KvAcquire): unknown;
  host: { clock: Clock; waitForKey(key: string, index: number, waitMs: number, signal?: AbortSignal): Promise<void> };
}

export function plant(kind: Plant, runtime: Runtime): void {
  if (kind === 'queue-cut-in') {
    const q = runtime.lockQueues as unknown as QueueInternals;
    const enqueue = q.enqueue.bind(q);
    q.enqueue = (cmd) => {
      const waiter = enqueue(cmd);
      const queue = q.queues.get(cmd.key)!;
      if (queue.length > 2) queue.splice(1, 0, queue.pop());
      return waiter;
    };
  } else if (kind === 'deaf-queue') {
    const host = (runtime.lockQueues as unknown as QueueInternals).host;
    host.waitForKey = (_key, _index, waitMs) => new Promise((resolve) => { host.clock.setTimer(waitMs, resolve); });
  } else {
    runtime.checkOwner.reconcile = () => {};
  }
}
