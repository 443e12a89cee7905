// Goal: the rules that turn a log's status into who leads and how far each node is: a single node leads
// itself; in a cluster the node connected to the stream's leader server stands for it (first by name),
// the server's name when no node does, "" during an election or while the node cannot write; stale
// reports are unknown; lag counts from the highest index any fresh node applied.
import { describe, expect, test } from 'vitest';
import type { LogStatus, NodeProgress } from '../../src/ports/log.ts';
import type { Member } from '../../src/ports/membership.ts';
import { logView, progressStaleMs, type ViewInput } from '../../src/http/routes/log-view.ts';

const member = (name: string, http: string): Member => ({ name, id: name, http, grpc: '', status: 'alive', lastHeardMs: 0 });
const members = [member('a', '10.0.0.1:8500'), member('b', '10.0.0.2:8500'), member('c', '10.0.0.3:8500')];

function cluster(leader: string | undefined, nodes: NodeProgress[]): LogStatus {
  return {
    kind: 'jetstream', lastIndex: 10, firstIndex: 1, snapshotIndex: 0, nodes,
    stream: {
      name: 'ROSTER_LOG', leader, firstSeq: 1, lastSeq: 9, messages: 9, server: 'na', askedAgoMs: 0,
      replicas: ['na', 'nb', 'nc'].map((name) => ({ name, leader: name === leader, current: true, activeMs: 0, lagMessages: 0 })),
    },
  };
}

const progress = (name: string, server: string, appliedIndex: number, ageMs = 100): NodeProgress => ({ name, server, appliedIndex, ageMs });

function input(status: LogStatus | undefined, over: Partial<ViewInput> = {}): ViewInput {
  return { status, appliedIndex: 10, nodeName: 'a', selfAddress: '10.0.0.1:8500', members, writable: true, ...over };
}

describe('single node', () => {
  test('leads itself: leader and the only peer are its address', () => {
    const v = logView(input({ kind: 'wal', lastIndex: 10, firstIndex: 1, snapshotIndex: 0 }));
    expect(v).toMatchObject({ role: 'Leader', leader: '10.0.0.1:8500', peers: ['10.0.0.1:8500'], commitIndex: 10 });
    expect(v.nodes).toEqual([{ name: 'a', address: '10.0.0.1:8500', server: '', appliedIndex: 10, lag: 0, ageMs: 0 }]);
  });

  test('a node that cannot write knows no leader', () => {
    expect(logView(input({ kind: 'wal', lastIndex: 10, firstIndex: 1, snapshotIndex: 0 }, { writable: false })).leader).toBe('');
  });
});

describe('cluster', () => {
  const nodes = [progress('a', 'na', 10, 0), progress('b', 'nb', 8), progress('c', 'nc', 10)];

  test('the node on the leader server is Leader; the others Follower; everyone answers its address', () => {
    expect(logView(input(cluster('nb', nodes)))).toMatchObject({ role: 'Follower', leader: '10.0.0.2:8500' });
    expect(logView(input(cluster('nb', nodes), { nodeName: 'b', selfAddress: '10.0.0.2:8500' })).role).toBe('Leader');
    expect(logView(input(cluster('nb', nodes))).peers).toEqual(['10.0.0.1:8500', '10.0.0.2:8500', '10.0.0.3:8500']);
  });

  test('no node on the leader server: its name stands; during an election "" and Candidate', () => {
    const elsewhere = [progress('a', 'na', 10, 0), progress('b', 'na', 10), progress('c', 'nc', 10)];
    const v = logView(input(cluster('nb', elsewhere)));
    expect(v.leader).toBe('nb');
    // two nodes on one server: the first by name stands for it, the other copy keeps its server's name
    expect(v.peers).toEqual(['10.0.0.1:8500', 'nb', '10.0.0.3:8500']);
    expect(logView(input(cluster(undefined, nodes)))).toMatchObject({ role: 'Candidate', leader: '' });
  });

  test('lag counts from the highest fresh index; a stale report is unknown and stands for nothing', () => {
    const stale = [progress('a', 'na', 10, 0), progress('b', 'nb', 50, progressStaleMs + 1), progress('c', 'nc', 7)];
    const v = logView(input(cluster('nb', stale)));
    expect(v.commitIndex).toBe(10);
    expect(v.leader).toBe('nb');
    expect(v.nodes.map((n) => [n.name, n.appliedIndex, n.lag])).toEqual([['a', 10, 0], ['b', undefined, undefined], ['c', 7, 3]]);
  });

  test('each fresh node shows the newest window of the stream it digested; a stale report shows none', () => {
    const w = (end: number, sha: string) => ({ end, sha });
    const v = logView(input(cluster('nb', [
      { ...progress('a', 'na', 10, 0), window: w(2048, 'aaaaaaaaaaaaaaaa') },
      { ...progress('b', 'nb', 10), window: w(2048, 'bbbbbbbbbbbbbbbb') },
      { ...progress('c', 'nc', 10, progressStaleMs + 1), window: w(1024, 'cccccccccccccccc') },
    ])));
    expect(v.nodes.map((n) => [n.name, n.window])).toEqual([
      ['a', { end: 2048, sha: 'aaaaaaaaaaaaaaaa' }], ['b', { end: 2048, sha: 'bbbbbbbbbbbbbbbb' }], ['c', undefined],
    ]);
  });

  test('a member that never reported is listed, unknown', () => {
    const v = logView(input(cluster('na', [progress('a', 'na', 10, 0)])));
    expect(v.nodes.map((n) => [n.name, n.address, n.appliedIndex, n.ageMs])).toEqual([
      ['a', '10.0.0.1:8500', 10, 0], ['b', '10.0.0.2:8500', undefined, undefined], ['c', '10.0.0.3:8500', undefined, undefined],
    ]);
    expect(v.role).toBe('Leader');
  });
});
