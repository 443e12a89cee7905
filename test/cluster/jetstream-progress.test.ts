// Goal: the progress table behind /v1/operator/log: a node reports itself at once and every second,
// keeps the newest report per other node with its age, ignores what is not a report, and forgets a
// node unheard for progressForgetMs.
import { afterEach, describe, expect, test, vi } from 'vitest';
import type { NatsConnection } from '@nats-io/transport-node';
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
    const now = Date.now();
    expect(board.nodes(now)).toEqual([
      { name: 'a', server: 'n1', appliedIndex: 4, ageMs: 0 },
      { name: 'b', server: 'n2', appliedIndex: 2, ageMs: progressReportMs },
      { name: 'c', server: 'n3', appliedIndex: 4, ageMs: 0 },
    ]);
    expect(board.nodes(now + progressForgetMs + 1).map((n) => n.name)).toEqual(['a']);
    board.stop();
  });
});
