// Goal: `roster operator log` prints the agent's view of its log as a user reads it: the summary (log
// kind, leader, indexes), the stream's copies in a cluster, one row per node with its applied index and
// lag ("unknown" for a node that stopped reporting); `--json` prints /v1/operator/log's answer.
import { describe, expect, test } from 'vitest';
import picocolors from 'picocolors';
import { operatorLogText, type OperatorLog } from '../../src/cli/operator.ts';
import { client, withAgent, type Agent } from '../support/agent.ts';
import { roster } from './support.ts';

let agent: Agent;
withAgent((a) => { agent = a; });

const plain = { colors: picocolors.createColors(false) };

describe('roster operator log', () => {
  test('against a single node: text and --json', async () => {
    await client(agent).put('/v1/kv/cli-oplog', 'v');
    const json = await roster(['operator', 'log', '--json'], { agent: agent.url });
    expect(json.code).toBe(0);
    const log = JSON.parse(json.stdout) as OperatorLog;
    expect(log).toMatchObject({ kind: 'wal', role: 'Leader', leader: agent.url.replace('http://', '') });
    const text = await roster(['operator', 'log'], { agent: agent.url });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^Log\s+wal$/m);
    expect(text.stdout).toMatch(new RegExp(`^Leader\\s+${log.leader}$`, 'm'));
    expect(text.stdout).toMatch(/^Node\s+Address\s+Server\s+Applied\s+Lag\s+Reported$/m);
    expect(text.stdout).toMatch(new RegExp(`^node1\\s+${log.leader}\\s+${log.appliedIndex}\\s+0\\s+0 ms ago$`, 'm'));
  });

  test('a cluster answer: the replicas table, unknown for a node that stopped reporting, each node\'s newest stream window', () => {
    const log: OperatorLog = {
      kind: 'jetstream', node: 'a', role: 'Follower', leader: '10.0.0.2:8500', appliedIndex: 40, lastIndex: 40, commitIndex: 42,
      firstIndex: 1, snapshotIndex: 20,
      stream: {
        name: 'ROSTER_LOG', leader: 'nb', firstSeq: 1, lastSeq: 30, messages: 30, server: 'na',
        replicas: [
          { name: 'na', leader: false, current: true, activeMs: 120, lagMessages: 0 },
          { name: 'nb', leader: true, current: true, activeMs: 0, lagMessages: 0 },
          { name: 'nc', leader: false, current: false, activeMs: 9000, lagMessages: 12 },
        ],
      },
      nodes: [
        { name: 'a', address: '10.0.0.1:8500', server: 'na', appliedIndex: 40, lag: 2, ageMs: 0, window: { end: 1024, sha: '0123456789abcdef' } },
        { name: 'b', address: '10.0.0.2:8500', server: 'nb', appliedIndex: 42, lag: 0, ageMs: 300, window: { end: 1024, sha: 'fedcba9876543210' } },
        { name: 'c', address: '10.0.0.3:8500', server: 'nc', appliedIndex: null, lag: null, ageMs: 9000, window: null },
      ],
    };
    const text = operatorLogText(log, plain);
    expect(text).toMatch(/^Log\s+jetstream \(stream ROSTER_LOG\)$/m);
    expect(text).toMatch(/^Stream seq\s+1\.\.30 \(30 messages\)$/m);
    expect(text).toMatch(/^nb\s+leader\s+yes\s+0 ms\s+0$/m);
    expect(text).toMatch(/^nc\s+follower\s+no\s+9000 ms\s+12$/m);
    expect(text).toMatch(/^c\s+10\.0\.0\.3:8500\s+nc\s+unknown\s+unknown\s+9000 ms ago\s+unknown$/m);
    // Two nodes read the same window of the stream differently: both are marked.
    expect(text).toMatch(/^a\s+.*\s+1024 01234567 differs$/m);
    expect(text).toMatch(/^b\s+.*\s+1024 fedcba98 differs$/m);
    const agreeing = { ...log, nodes: log.nodes.map((n) => (n.window ? { ...n, window: { end: 1024, sha: '0123456789abcdef' } } : n)) };
    expect(operatorLogText(agreeing, plain)).toMatch(/^b\s+.*\s+1024 01234567$/m);
    expect(operatorLogText({ ...log, leader: '' }, plain)).toMatch(/^Leader\s+none \(election\)$/m);
  });
});
