// Goal: the stream's views by count of work, in the test's process. A view outlives its last subscriber
// for `viewIdleMs` (at most `idleViewsMax` such views), kept up to date meanwhile, so subscribing again
// reuses it instead of reading every item from state anew; past either bound it goes. Health entries read
// their checks from the state's index by node and service, never in a pass over the whole checks table,
// and list them in the node's order, exactly as the node's checks filtered per instance did.
import { describe, expect, test, vi } from 'vitest';
import type { Command } from '../../src/domain/commands.ts';
import type { Change } from '../../src/runtime/index.ts';
import { apply, passiveDefinition, RegistryState } from '../../src/state/index.ts';
import type { Sub, View } from '../../src/http/stream-conn.ts';
import { healthEntry, renderCheck } from '../../src/http/routes/catalog-render.ts';
import { Views } from '../../src/http/stream-subscriptions.ts';
import { makeView, type TopicView } from '../../src/http/stream-views.ts';

const frameBytes = 64 * 1024;

/** A topic of one item whose value the test sets, counting the snapshots read from it. */
interface CountingTopic { topic: TopicView; value: string; reads: number }

function countingTopic(): CountingTopic {
  const t: CountingTopic = {
    value: 'v1',
    reads: 0,
    topic: {
      tracking: 'fingerprints',
      candidatesReadable: true,
      cursor: () => {
        t.reads += 1;
        return { next: () => ({ items: [['k', t.value]], chars: 1 + t.value.length, done: true }) };
      },
      candidates: () => [{ key: 'k', value: () => t.value }],
    } as TopicView,
  };
  return t;
}

const request = (key: string, view: TopicView) => ({ ok: true as const, id: 'a', topic: 'test', key, index: 0, epoch: undefined, filter: {}, view });

function join(views: Views, key: string, view: TopicView): Sub {
  const sub: Sub = { id: key, conn: undefined as never, view: views.of(request(key, view)), snapshot: undefined };
  sub.view.subs.add(sub);
  return sub;
}

const change = (index: number): Change => ({ index, atMs: index, kv: [], sessions: [], checks: [], services: [], nodes: [] });

describe('views outlive their last subscriber a while', () => {
  test('a view left and taken again within viewIdleMs is not read again; after it, it is', () => {
    const views = new Views({ snapshotFrameBytes: frameBytes, viewIdleMs: 10_000, idleViewsMax: 8 }, () => new RegistryState());
    const t = countingTopic();
    const first = join(views, 'a', t.topic);
    views.leave(first, 1_000);
    views.sweep(10_999);
    const again = join(views, 'a', t.topic);
    expect(again.view).toBe(first.view);
    expect(t.reads).toBe(1);
    views.leave(again, 20_000);
    views.sweep(30_000);
    expect(views.none).toBe(true);
    join(views, 'a', t.topic);
    expect(t.reads).toBe(2);
  });

  test('past idleViewsMax the view left longest ago goes first', () => {
    const views = new Views({ snapshotFrameBytes: frameBytes, viewIdleMs: 10_000, idleViewsMax: 2 }, () => new RegistryState());
    const topics = ['a', 'b', 'c'].map(() => countingTopic());
    const subs = ['a', 'b', 'c'].map((key, i) => join(views, key, topics[i]!.topic));
    subs.forEach((sub, i) => views.leave(sub, 1_000 + i));
    ['a', 'b', 'c'].forEach((key, i) => join(views, key, topics[i]!.topic));
    expect(topics.map((t) => t.reads)).toEqual([2, 1, 1]);
  });

  test('an idle view keeps up with changes: after it is taken again, a change back is still news', () => {
    const views = new Views({ snapshotFrameBytes: frameBytes, viewIdleMs: 10_000, idleViewsMax: 8 }, () => new RegistryState());
    const t = countingTopic();
    const first = join(views, 'a', t.topic);
    views.leave(first, 1_000);
    t.value = 'v2';
    expect([...views.changes(change(2))].map(([, out]) => out)).toEqual([[{ op: 'upsert', key: 'k', value: 'v2' }]]);
    const again: View = join(views, 'a', t.topic).view;
    t.value = 'v1';
    expect([...views.changes(change(3))]).toEqual([[again, [{ op: 'upsert', key: 'k', value: 'v1' }]]]);
    expect([...views.changes(change(4))]).toEqual([]);
  });
});

// ---------------------------------------------------------------- health entries

class Registry {
  readonly state = new RegistryState();

  run(cmd: Command): void {
    const { result } = apply(this.state, { index: this.state.index + 1, atMs: 1_000 * (this.state.index + 1), pid: `p${this.state.index}`, cmd });
    expect(result).toMatchObject({ ok: true });
  }

  node(node: string): void {
    this.run({ t: 'catalog.register', node, id: '', address: '127.0.0.1', meta: {}, checks: [{ checkId: 'serfHealth', name: 'Serf', status: 'passing', notes: '', output: '' }] });
  }

  /** Instance `id` of `service` on `node` with checks `<id>:b`, `<id>:A` and `z-<id>`: the node's serfHealth sorts among them. */
  service(node: string, id: string, service: string): void {
    const check = (checkId: string) => ({ checkId, name: checkId, notes: '', status: 'passing' as const, output: '', serviceId: id, type: 'ttl' as const, definition: { ...passiveDefinition, ttlMs: 60_000 } });
    this.run({
      t: 'service.register', node, replaceExistingChecks: false,
      service: { id, service, kind: '', tags: [], address: '', port: 8080, meta: {}, taggedAddresses: {}, weights: { Passing: 1, Warning: 1 }, enableTagOverride: false },
      checks: [check(`${id}:b`), check(`${id}:A`), check(`z-${id}`)],
    });
  }
}

describe('health entries read their checks for many instances at once', () => {
  const r = new Registry();
  r.node('n1');
  r.node('n2');
  const instances = 300;
  for (let i = 0; i < instances; i++) r.service(i % 10 === 0 ? 'n2' : 'n1', `web-${String(i).padStart(3, '0')}`, 'web');
  const st = r.state;
  const api = { runtime: { state: st, isStopping: false }, datacenter: 'dc1', dialect: 'seed' } as never;

  test('each entry lists its checks and its node\'s in the node\'s order, as filtering the node\'s checks did', () => {
    for (const s of st.instancesOf('web')) {
      const expected = st.checksOfNode(s.node).filter((c) => c.serviceId === '' || c.serviceId === s.id).map((c) => renderCheck(c));
      expect(healthEntry(st, s, 'dc1', false)!.Checks).toEqual(expected);
    }
  });

  test('a service_health snapshot of 300 entries on one node reads no pass over the checks table', () => {
    const view = makeView('service_health', 'web', {}, api);
    if ('error' in view) throw new Error(view.error);
    const passes = vi.spyOn(st.checks, 'values');
    const cursor = view.cursor();
    let items = 0;
    for (let page = cursor.next(frameBytes); ; page = cursor.next(frameBytes)) {
      items += page.items.length;
      if (page.done) break;
    }
    expect(items).toBe(instances);
    expect(passes.mock.calls.length).toBe(0);
    passes.mockRestore();
  });

  test('a node check change touches every instance of the node without a pass over the checks table', () => {
    const view = makeView('service_health', '', {}, api);
    if ('error' in view) throw new Error(view.error);
    const passes = vi.spyOn(st.checks, 'values');
    const candidates = view.candidates({ ...change(st.index), checks: [{ node: 'n1', checkId: 'serfHealth', serviceId: '' }] });
    expect(candidates).toHaveLength(instances - instances / 10);
    for (const c of candidates) expect(c.value()).toBeDefined();
    expect(passes.mock.calls.length).toBe(0);
    passes.mockRestore();
  });
});
