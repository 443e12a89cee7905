// Goal: a single node tells the truth about its log: it leads itself (/v1/status/leader and peers are its
// own address, Stats.raft.state Leader), and /v1/operator/log reports the WAL's indexes consistently
// after writes: applied = last = the last write's index, a compaction point no later than that, a
// snapshot once --snapshot-every entries were written, and its own row with no lag.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';

let agent: Agent;
beforeAll(async () => { agent = await startAgent({ args: ['--snapshot-every', '20'] }); });
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

describe('single node log status', () => {
  test('leader and peers are this node; Stats.raft says Leader with its indexes', async () => {
    const c = client(agent);
    const own = agent.url.replace('http://', '');
    expect((await c.get('/v1/status/leader')).json()).toBe(own);
    expect((await c.get('/v1/status/peers')).json()).toEqual([own]);
    const stats = (await c.get('/v1/agent/self')).json().Stats;
    expect(stats.raft).toMatchObject({ state: 'Leader', num_peers: '0', last_contact: '0' });
    expect(stats.raft.applied_index).toBe(stats.raft.last_log_index);
    expect(stats.log).toMatchObject({ kind: 'wal', leader: own, lag: '0', stream: '' });
  });

  test('operator log: WAL indexes agree with the writes', async () => {
    const c = client(agent);
    let index = 0;
    for (let k = 0; k < 50; k += 1) {
      const r = await c.put(`/v1/kv/oplog/${k}`, 'v');
      index = Number(r.headers.get('x-consul-index'));
    }
    const r = await c.get('/v1/operator/log');
    expect(r.status).toBe(200);
    const log = r.json();
    expect(log).toMatchObject({ kind: 'wal', node: 'node1', role: 'Leader', leader: agent.url.replace('http://', ''), stream: null });
    expect(log.appliedIndex).toBe(index);
    expect(log.lastIndex).toBe(index);
    expect(log.commitIndex).toBe(index);
    expect(log.snapshotIndex).toBeGreaterThan(0);
    expect(log.snapshotIndex).toBeLessThanOrEqual(index);
    expect(log.firstIndex).toBeGreaterThanOrEqual(1);
    expect(log.firstIndex).toBeLessThanOrEqual(log.snapshotIndex + 1);
    expect(log.nodes).toEqual([{ name: 'node1', address: log.leader, server: '', appliedIndex: index, lag: 0, ageMs: 0, window: null }]);
  });
});
