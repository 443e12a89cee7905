// Goal: the dashboard's derivations (ui/src/model.ts), row by row: a service's health is the worst of its
// instances' checks (its own and its node's; none counts as passing; maintenance > critical > warning >
// passing), nodes merge the catalog, the members and what the stream shows, checks sort worst first, and
// a session's locks are the KV entries whose Session is it.
import { describe, expect, test } from 'vitest';
import { checkRows, nodeRows, serviceRows, sessionRows, worst, type Check, type HealthEntry, type Session } from '../../ui/src/model.ts';

const check = (node: string, id: string, status: string, serviceId = ''): Check => ({
  Node: node, CheckID: id, Name: id, Status: status, Notes: '', Output: '', ServiceID: serviceId, ServiceName: serviceId.replace(/-\d+$/, ''), Type: 'ttl',
});

const entry = (node: string, service: string, id: string, checks: Check[]): HealthEntry => ({
  Node: { Node: node, Address: `10.0.0.${node.slice(-1)}` }, Service: { ID: id, Service: service, Tags: ['t'], Address: '' }, Checks: checks,
});

describe('worst', () => {
  test('no checks is passing; maintenance > critical > warning > passing; an unknown status counts as critical', () => {
    expect(worst([])).toBe('passing');
    expect(worst(['passing', 'warning'])).toBe('warning');
    expect(worst(['warning', 'critical', 'passing'])).toBe('critical');
    expect(worst(['critical', 'maintenance'])).toBe('maintenance');
    expect(worst(['passing', 'bogus'])).toBe('critical');
  });
});

describe('serviceRows', () => {
  test('one row per name, sorted; health is the worst instance, node checks included; counts per status', () => {
    const rows = serviceRows([
      entry('node1', 'web', 'web-1', [check('node1', 'gossip', 'passing'), check('node1', 'service:web-1', 'passing', 'web-1')]),
      entry('node2', 'web', 'web-2', [check('node2', 'gossip', 'critical'), check('node2', 'service:web-2', 'passing', 'web-2')]),
      entry('node1', 'api', 'api-1', []),
    ]);
    expect(rows.map((r) => [r.name, r.status, r.instances.length])).toEqual([['api', 'passing', 1], ['web', 'critical', 2]]);
    expect(rows[1]!.byStatus).toEqual({ passing: 1, warning: 0, critical: 1, maintenance: 0 });
    expect(rows[1]!.nodes).toEqual(['node1', 'node2']);
  });
});

describe('nodeRows', () => {
  test('catalog, members and stream merged; a node is as healthy as its node checks only', () => {
    const rows = nodeRows(
      [{ Node: 'node1', Address: '10.0.0.1', Meta: { rack: 'r1' } }],
      [{ Name: 'node1', Addr: '10.0.0.1', Port: 8500, Status: 1 }, { Name: 'node3', Addr: '10.0.0.3', Port: 8500, Status: 4 }],
      [check('node1', 'service:web-1', 'critical', 'web-1'), check('node1', 'gossip', 'warning'), check('node2', 'disk', 'critical')],
      [entry('node1', 'web', 'web-1', []), entry('node2', 'db', 'db-1', [])],
    );
    expect(rows.map((r) => [r.name, r.status, r.member, r.address, r.services, r.checks])).toEqual([
      ['node1', 'warning', 'alive', '10.0.0.1', ['web'], 2],
      ['node2', 'critical', undefined, '10.0.0.2', ['db'], 1],
      ['node3', 'passing', 'failed', '', [], 0],
    ]);
    expect(rows[0]!.meta).toEqual({ rack: 'r1' });
  });
});

describe('checkRows and sessionRows', () => {
  test('checks worst first, then by node and id', () => {
    const rows = checkRows([check('b', 'x', 'passing'), check('a', 'y', 'critical'), check('a', 'x', 'warning'), check('a', 'a', 'critical')]);
    expect(rows.map((c) => `${c.Node}/${c.CheckID}`)).toEqual(['a/a', 'a/y', 'a/x', 'b/x']);
  });

  test("a session's locks are the entries whose Session is it, by key; unheld entries belong to nobody", () => {
    const session = (id: string, name: string): Session => ({ ID: id, Name: name, Node: 'node1', Behavior: 'release', TTL: '', LockDelay: 0, NodeChecks: null, ServiceChecks: null });
    const rows = sessionRows([session('s2', 'b'), session('s1', 'a')], [
      { Key: 'locks/z', Session: 's1', LockIndex: 1 }, { Key: 'locks/a', Session: 's1', LockIndex: 3 }, { Key: 'free', LockIndex: 2 },
    ]);
    expect(rows.map((r) => [r.session.ID, r.locks.map((l) => l.Key)])).toEqual([['s1', ['locks/a', 'locks/z']], ['s2', []]]);
  });
});
