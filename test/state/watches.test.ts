// Goal: the blocking-query wake-ups (src/runtime/watches.ts) wake exactly the waiters whose interest a
// change touched — by key, by prefix, sessions, catalog, service name — time out and abort cleanly, and forget
// waiters once they are done (the index by interest keeps no empty buckets' waiters around).
import { describe, expect, test } from 'vitest';
import { Watches, type Interest } from '../../src/runtime/watches.ts';

const touched = (keys: string[], more: { sessions?: boolean; catalog?: boolean; services?: string[] } = {}) =>
  ({ kvKeys: new Set(keys), sessions: more.sessions ?? false, catalog: more.catalog ?? false, services: new Set(more.services ?? []) });

/** Starts a wait and records whether it has settled and how. */
function waiting(w: Watches, interest: Interest, timeoutMs = 60_000, signal?: AbortSignal) {
  const state: { settled?: boolean } = {};
  const done = w.wait(interest, timeoutMs, signal).then((changed) => { state.settled = changed; });
  return { state, done };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('Watches', () => {
  test('a key waiter wakes for its key only; a prefix waiter for any key under the prefix', async () => {
    const w = new Watches();
    const a = waiting(w, { kind: 'key', key: 'app/a' });
    const b = waiting(w, { kind: 'key', key: 'app/b' });
    const p = waiting(w, { kind: 'prefix', prefix: 'app/' });
    const q = waiting(w, { kind: 'prefix', prefix: 'other/' });
    expect(w.size).toBe(4);
    w.notify(touched(['app/a']));
    await tick();
    expect([a.state.settled, b.state.settled, p.state.settled, q.state.settled]).toEqual([true, undefined, true, undefined]);
    expect(w.size).toBe(2);
    w.notify(touched(['other/x', 'app/b']));
    await tick();
    expect([b.state.settled, q.state.settled]).toEqual([true, true]);
    expect(w.size).toBe(0);
  });

  test('waiters woken together run in turn: what follows one wake-up, however many steps, ends before the next wakes', async () => {
    // A blocking query reads and renders its answer in the steps after its wake-up; woken all at once, every
    // query rendered before any answer was sent, and the answers of a thousand queries on a large list were
    // all held at the same time.
    const w = new Watches();
    const order: string[] = [];
    const query = async (name: string) => {
      await w.wait({ kind: 'sessions' }, 60_000);
      order.push(`${name} rendering`);
      for (let step = 0; step < 5; step++) await Promise.resolve();
      order.push(`${name} sent`);
    };
    const all = Promise.all(['a', 'b', 'c'].map(query));
    w.notify(touched([], { sessions: true }));
    await all;
    expect(order).toEqual(['a rendering', 'a sent', 'b rendering', 'b sent', 'c rendering', 'c sent']);
  });

  test('sessions and catalog waiters wake on their flag, not on key changes', async () => {
    const w = new Watches();
    const s = waiting(w, { kind: 'sessions' });
    const c = waiting(w, { kind: 'catalog' });
    w.notify(touched(['k']));
    await tick();
    expect([s.state.settled, c.state.settled]).toEqual([undefined, undefined]);
    w.notify(touched([], { sessions: true }));
    await tick();
    expect([s.state.settled, c.state.settled]).toEqual([true, undefined]);
    w.notify(touched([], { catalog: true }));
    await tick();
    expect(c.state.settled).toBe(true);
  });

  test('a service waiter wakes for its name only, not for another service\'s change nor the catalog flag alone', async () => {
    const w = new Watches();
    const web = waiting(w, { kind: 'service', name: 'web' });
    const db = waiting(w, { kind: 'service', name: 'db' });
    const c = waiting(w, { kind: 'catalog' });
    w.notify(touched([], { catalog: true, services: ['db'] }));
    await tick();
    expect([web.state.settled, db.state.settled, c.state.settled]).toEqual([undefined, true, true]);
    w.notify(touched([], { catalog: true }));
    await tick();
    expect(web.state.settled).toBeUndefined();
    w.notify(touched([], { catalog: true, services: ['web'] }));
    await tick();
    expect(web.state.settled).toBe(true);
    expect(w.size).toBe(0);
  });

  test('a timeout or an abort settles with false and removes the waiter; wakeAll wakes everyone', async () => {
    const w = new Watches();
    const timedOut = waiting(w, { kind: 'key', key: 'k' }, 5);
    const abort = new AbortController();
    const aborted = waiting(w, { kind: 'prefix', prefix: 'p' }, 60_000, abort.signal);
    abort.abort();
    await Promise.all([timedOut.done, aborted.done]);
    expect([timedOut.state.settled, aborted.state.settled]).toEqual([false, false]);
    expect(w.size).toBe(0);
    const rest = [waiting(w, { kind: 'key', key: 'x' }), waiting(w, { kind: 'prefix', prefix: '' }), waiting(w, { kind: 'catalog' })];
    w.wakeAll();
    await Promise.all(rest.map((r) => r.done));
    expect(rest.map((r) => r.state.settled)).toEqual([true, true, true]);
    expect(w.size).toBe(0);
  });

  test('two waiters on one key both wake, and the key is watched again afterwards', async () => {
    const w = new Watches();
    const [x, y] = [waiting(w, { kind: 'key', key: 'k' }), waiting(w, { kind: 'key', key: 'k' })];
    w.notify(touched(['k']));
    await Promise.all([x.done, y.done]);
    const z = waiting(w, { kind: 'key', key: 'k' });
    w.notify(touched(['k']));
    await z.done;
    expect(z.state.settled).toBe(true);
  });
});
