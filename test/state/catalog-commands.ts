/**
 * Random catalog and session commands over a few nodes, service IDs and names, for the property tests
 * of the state's indexes and of what is computed from them: registrations (a node's address changed, a
 * service's checks replaced or not, a check moved to another service or to the node), deregistrations, node
 * removal, sessions.
 */
import fc from 'fast-check';
import type { Command } from '../../src/domain/commands.ts';
import { node, registration, service, session } from './apply-table.ts';

export const nodes = ['n1', 'n2', 'n3'];
export const ids = ['a', 'b', 'c', 'd'];
export const names = ['web', 'db'];

const nodeName = fc.constantFrom(...nodes);
const id = fc.constantFrom(...ids);

export const catalogCommand: fc.Arbitrary<Command> = fc.oneof(
  nodeName.map((n) => node(n)),
  // A node registered again with another address: the node changes, not its services or checks.
  fc.record({ n: nodeName, address: fc.constantFrom('10.0.0.1', '10.0.0.2') }).map(({ n, address }) => node(n, undefined, address)),
  fc.record({ n: nodeName, s: id, name: fc.constantFrom(...names), checks: fc.subarray(['c1', 'c2', 'c3']), replace: fc.boolean() })
    .map(({ n, s, name, checks, replace }): Command => ({
      t: 'service.register', node: n, service: service(s, { service: name }), replaceExistingChecks: replace,
      checks: checks.map((c) => registration(`${s}-${c}`)),
    })),
  fc.record({ n: nodeName, s: id }).map(({ n, s }): Command => ({ t: 'service.deregister', node: n, serviceId: s })),
  fc.record({ n: nodeName, c: fc.constantFrom('x', 'y', 'a-c1') }).map(({ n, c }): Command => ({ t: 'check.register', node: n, check: registration(c) })),
  // A check registered again under another service (or the node) moves there.
  fc.record({ n: nodeName, c: fc.constantFrom('m', 'x'), s: fc.constantFrom('', ...ids), status: fc.constantFrom('passing' as const, 'critical' as const) })
    .map(({ n, c, s, status }): Command => ({ t: 'check.register', node: n, check: registration(c, { serviceId: s, status }) })),
  fc.record({ n: nodeName, c: fc.constantFrom('x', 'y', 'a-c1', 'b-c2') }).map(({ n, c }): Command => ({ t: 'check.deregister', node: n, checkId: c })),
  nodeName.map((n): Command => ({ t: 'catalog.deregister', node: n })),
  fc.record({ n: nodeName, s: id }).map(({ n, s }) => session(`s-${n}-${s}`, { node: n, nodeChecks: [] })),
  fc.record({ n: nodeName, s: id }).map(({ n, s }): Command => ({ t: 'session.destroy', id: `s-${n}-${s}` })),
);
