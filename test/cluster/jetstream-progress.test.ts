// Goal: what the JetStream log's status() is made of: the progress table (a node reports itself at once
// and every second, keeps the newest report per other node with its age, ignores what is not a report,
// forgets a node unheard for progressForgetMs) and the stream's copies as the leadership watch records
// them (the leader first-hand, each replica's current flag, last seen in ms, lag in messages). A wall clock
// set forward forgets no node: ages are measured on the monotonic clock.
import { afterEach, describe, expect, test, vi } from 'vitest';
import type { NatsConnection } from '@nats-io/transport-node';
import type { StreamInfo } from '@nats-io/jetstream';
import { LeadershipWatch } from '../../cluster/jetstream/leadership.ts';
import { decodeProgress, progressForgetMs, ProgressBoard, progressReportMs, progressSubject } from '../../cluster/jetstream/progress.ts';

const encode = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

/** A connection that loops publishes back to the one subscriber, as core NATS does. */
function loopback(): { nc: NatsConnection; published: unknown[]; deliver(data: Uint8Array): void } {
  let callback: ((err: Error | null, msg: { data: Uint8Array }) => void) | undefined;
  const published: unknown[] = [];
  const nc = {
    subscribe: (_s: string, o: { callback: typeof callback }) => { callback = o.callback; return { unsubscribe: () => undefined }; },
    publish: (_s: string, data: Uint8Array) => { published.push(JSON.parse(new TextDecoder().decode(data))); callback?.(null, { data }); },
  } as unknown as NatsConnection;
  return { nc, published, deliver: (data) => callback?.(null, { data }) };
}

afterEach(() => vi.useRealTimers());

describe('progress reports', () => {
  test('decodes a report and refuses anything else', () => {
    expect(decodeProgress(encode({ name: 'a', server: 'n1', applied: 7 }))).toEqual({ name: 'a', server: 'n1', appliedIndex: 7 });
    for (const bad of [{ name: '', server: 'n1', applied: 1 }, { name: 'a', server: 1, applied: 1 }, { name: 'a', server: 'n1', applied: 1.5 }, 'x']) {
      expect(decodeProgress(encode(bad))).toBeUndefined();
    }
    expect(decodeProgress(new TextEncoder().encode('{'))).toBeUndefined();
    expect(decodeProgress(encode({ name: 'a'.repeat(2000), server: '', applied: 1 }))).toBeUndefined();
  });

  test('reports at once and every second; keeps the others with their age; forgets the long silent', () => {
    vi.useFakeTimers();
    let applied = 3;
    const board = new ProgressBoard('a', () => ({ server: 'n1', appliedIndex: applied }));
    const { nc, published, deliver } = loopback();
    board.start(nc, progressSubject('ROSTER_LOG'));
    expect(published).toEqual([{ name: 'a', server: 'n1', applied: 3 }]);
    deliver(encode({ name: 'b', server: 'n2', applied: 2 }));
    deliver(encode({ name: 'c', server: 'n3', applied: 1 }));
    applied = 4;
    vi.advanceTimersByTime(progressReportMs);
    expect(published).toHaveLength(2);
    deliver(encode({ name: 'c', server: 'n3', applied: 4 }));
    const now = performance.now();
    expect(board.nodes(now)).toEqual([
      { name: 'a', server: 'n1', appliedIndex: 4, ageMs: 0 },
      { name: 'b', server: 'n2', appliedIndex: 2, ageMs: progressReportMs },
      { name: 'c', server: 'n3', appliedIndex: 4, ageMs: 0 },
    ]);
    expect(board.nodes(now + progressForgetMs + 1).map((n) => n.name)).toEqual(['a']);
    board.stop();
  });
});

describe('progress reports across a wall-clock step', () => {
  test('a wall clock set forward an hour forgets no node: ages are measured on the monotonic clock', () => {
    vi.useFakeTimers();
    const board = new ProgressBoard('a', () => ({ server: 'n1', appliedIndex: 1 }));
    const { nc, deliver } = loopback();
    board.start(nc, progressSubject('ROSTER_LOG'));
    deliver(encode({ name: 'b', server: 'n2', applied: 1 }));
    vi.setSystemTime(Date.now() + 3_600_000);
    expect(board.marks().map((m) => [m.name, m.ageMs])).toEqual([['a', 0], ['b', 0]]);
    board.stop();
  });
});

describe('stream copies', () => {
  test('the leader and each replica with current, last seen and lag; the sequence range', () => {
    const watch = new LeadershipWatch();
    watch.start(() => new Promise(() => undefined), {
      cluster: { leader: 'n2', replicas: [{ name: 'n3', current: false, offline: false, active: 2_500_000_000, lag: 7 }, { name: 'n1', current: true, offline: false, active: 40_000_000, lag: 0 }] },
      state: { first_seq: 1, last_seq: 90, messages: 90 },
    } as unknown as StreamInfo);
    expect(watch.streamSeen()).toMatchObject({
      firstSeq: 1, lastSeq: 90, messages: 90,
      replicas: [
        { name: 'n1', leader: false, current: true, activeMs: 40, lagMessages: 0 },
        { name: 'n2', leader: true, current: true, activeMs: 0, lagMessages: 0 },
        { name: 'n3', leader: false, current: false, activeMs: 2500, lagMessages: 7 },
      ],
    });
    watch.stop();
  });
});
