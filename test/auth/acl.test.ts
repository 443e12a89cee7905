// Goal: prefix rules decide as specified (longest prefix wins, deny beats an equal-length allow, write
// implies read, default deny), accessFor names the permission of every endpoint family, and a session
// is usable by its owner or an operator only.
import { describe, expect, test } from 'vitest';
import { accessFor, allowed, allowedPrefix, allowedSomewhereUnder, isOperator, isRule, mayUseSession, parseRules, type Identity, type Rule } from '../../src/auth/index.ts';
import { apiRoutes } from '../../src/http/index.ts';

const who = (...rules: Rule[]): Identity => ({ subject: 'alice', rules });
const key = (name: string, access: 'read' | 'write') => ({ resource: 'key' as const, name, access });

describe('allowed', () => {
  test('no rule → denied (default deny)', () => {
    expect(allowed(who(), key('a', 'read'))).toBe(false);
    expect(allowed(who({ resource: 'service', prefix: '', access: 'write' }), key('a', 'read'))).toBe(false);
    expect(allowed(who({ resource: 'key', prefix: 'b/', access: 'write' }), key('a/x', 'read'))).toBe(false);
  });

  test('write implies read; read does not imply write', () => {
    expect(allowed(who({ resource: 'key', prefix: 'a/', access: 'write' }), key('a/x', 'read'))).toBe(true);
    expect(allowed(who({ resource: 'key', prefix: 'a/', access: 'write' }), key('a/x', 'write'))).toBe(true);
    expect(allowed(who({ resource: 'key', prefix: 'a/', access: 'read' }), key('a/x', 'read'))).toBe(true);
    expect(allowed(who({ resource: 'key', prefix: 'a/', access: 'read' }), key('a/x', 'write'))).toBe(false);
  });

  test('the longest matching prefix wins, in either direction and whatever the rule order', () => {
    const narrowed = [
      { resource: 'key', prefix: '', access: 'write' },
      { resource: 'key', prefix: 'app/', access: 'read' },
      { resource: 'key', prefix: 'app/secret/', access: 'deny' },
      { resource: 'key', prefix: 'app/secret/public', access: 'read' },
    ] satisfies Rule[];
    for (const rules of [narrowed, [...narrowed].reverse()]) {
      const id = who(...rules);
      expect(allowed(id, key('other', 'write'))).toBe(true);
      expect(allowed(id, key('app/x', 'read'))).toBe(true);
      expect(allowed(id, key('app/x', 'write'))).toBe(false);
      expect(allowed(id, key('app/secret/x', 'read'))).toBe(false);
      expect(allowed(id, key('app/secret/public-readme', 'read'))).toBe(true);
    }
  });

  test('deny beats an allow of equal length, whatever the order', () => {
    const allow: Rule = { resource: 'key', prefix: 'a/', access: 'write' };
    const deny: Rule = { resource: 'key', prefix: 'a/', access: 'deny' };
    expect(allowed(who(allow, deny), key('a/x', 'read'))).toBe(false);
    expect(allowed(who(deny, allow), key('a/x', 'read'))).toBe(false);
  });

  test('equal-length allows combine (read + write → write)', () => {
    const id = who({ resource: 'key', prefix: 'a/', access: 'read' }, { resource: 'key', prefix: 'a/', access: 'write' });
    expect(allowed(id, key('a/x', 'write'))).toBe(true);
  });

  test('an exact name is a prefix of itself; "" matches every name', () => {
    expect(allowed(who({ resource: 'key', prefix: 'a/b', access: 'read' }), key('a/b', 'read'))).toBe(true);
    expect(allowed(who({ resource: 'node', prefix: '', access: 'read' }), { resource: 'node', name: '', access: 'read' })).toBe(true);
  });
});

describe('allowedPrefix (recursive reads and deletes)', () => {
  test('a more specific deny or downgrade under the prefix refuses the whole prefix', () => {
    const id = who({ resource: 'key', prefix: 'app/', access: 'write' }, { resource: 'key', prefix: 'app/secret/', access: 'deny' });
    expect(allowed(id, key('app/', 'read'))).toBe(true);
    expect(allowedPrefix(id, key('app/', 'read'))).toBe(false);
    expect(allowedPrefix(id, key('app/public/', 'read'))).toBe(true);
    const downgraded = who({ resource: 'key', prefix: 'app/', access: 'write' }, { resource: 'key', prefix: 'app/ro/', access: 'read' });
    expect(allowedPrefix(downgraded, key('app/', 'read'))).toBe(true);
    expect(allowedPrefix(downgraded, key('app/', 'write'))).toBe(false);
  });

  test('refused when the prefix itself is refused', () => {
    expect(allowedPrefix(who(), key('app/', 'read'))).toBe(false);
  });
});

describe('allowedSomewhereUnder (a list that need not be walked)', () => {
  test('false exactly when no allowing rule lies under the prefix or above it', () => {
    const id = who({ resource: 'key', prefix: 'app/', access: 'read' }, { resource: 'key', prefix: 'ops/secret/', access: 'deny' },
      { resource: 'service', prefix: '', access: 'write' });
    const under = (prefix: string) => allowedSomewhereUnder(id, 'key', prefix, 'read');
    expect(under('app/db/')).toBe(true); // the rule lies above
    expect(under('ap')).toBe(true); // the rule lies under
    expect(under('')).toBe(true);
    expect(under('ops/')).toBe(false); // only a deny lies under
    expect(under('other/')).toBe(false);
    expect(allowedSomewhereUnder(id, 'key', 'app/', 'write')).toBe(false); // read does not grant write
    expect(allowedSomewhereUnder(id, 'service', 'web', 'write')).toBe(true);
    // Whenever it is false, no name under the prefix is allowed.
    for (const name of ['ops/', 'ops/secret/x', 'ops/public', 'other/a']) expect(allowed(id, key(name, 'read')), name).toBe(false);
  });
});

describe('rule validation', () => {
  test('isRule and parseRules accept only known resources and accesses, and strip extra fields', () => {
    expect(isRule({ resource: 'key', prefix: '', access: 'deny' })).toBe(true);
    expect(isRule({ resource: 'acl', prefix: '', access: 'read' })).toBe(false);
    expect(isRule({ resource: 'key', prefix: 1, access: 'read' })).toBe(false);
    expect(isRule({ resource: 'key', prefix: '', access: 'admin' })).toBe(false);
    expect(parseRules('nope')).toBeUndefined();
    expect(parseRules([{ resource: 'key', prefix: 'a', access: 'read', extra: 1 }])).toEqual([
      { resource: 'key', prefix: 'a', access: 'read' },
    ]);
    expect(parseRules(Array.from({ length: 257 }, () => ({ resource: 'key', prefix: '', access: 'read' })))).toBeUndefined();
  });
});

describe('accessFor', () => {
  const cases: [method: string, path: string, rest: string, expected: ReturnType<typeof accessFor>][] = [
    // KV
    ['GET', '/v1/kv/app/config', 'app/config', { resource: 'key', name: 'app/config', access: 'read' }],
    ['HEAD', '/v1/kv/app/config', 'app/config', { resource: 'key', name: 'app/config', access: 'read' }],
    ['PUT', '/v1/kv/app/config', 'app/config', { resource: 'key', name: 'app/config', access: 'write' }],
    ['DELETE', '/v1/kv/app/', 'app/', { resource: 'key', name: 'app/', access: 'write' }],
    ['GET', '/v1/kv/a%20b', 'a b', { resource: 'key', name: 'a b', access: 'read' }],
    ['GET', '/v1/kv', '', { resource: 'key', name: '', access: 'read' }],
    // Sessions
    // Sessions: rules name nodes; where the node is not in the path, the handler checks it.
    ['PUT', '/v1/session/create', '', { resource: 'session', name: '', access: 'write', byHandler: true }],
    ['PUT', '/v1/session/destroy/abc', 'abc', { resource: 'session', name: '', access: 'write', byHandler: true }],
    ['PUT', '/v1/session/renew/abc', 'abc', { resource: 'session', name: '', access: 'write', byHandler: true }],
    ['GET', '/v1/session/info/abc', 'abc', { resource: 'session', name: '', access: 'read', byHandler: true }],
    ['GET', '/v1/session/node/n1', 'n1', { resource: 'session', name: 'n1', access: 'read' }],
    ['GET', '/v1/session/list', '', { resource: 'session', name: '', access: 'read', byHandler: true }],
    ['GET', '/v1/session/list/', '', { resource: 'session', name: '', access: 'read', byHandler: true }],
    // Catalog
    ['PUT', '/v1/catalog/register', '', { resource: 'node', name: '', access: 'write', byHandler: true }],
    ['PUT', '/v1/catalog/deregister', '', { resource: 'node', name: '', access: 'write', byHandler: true }],
    ['GET', '/v1/catalog/services', '', { resource: 'node', name: '', access: 'read' }],
    ['GET', '/v1/catalog/nodes', '', { resource: 'node', name: '', access: 'read' }],
    ['GET', '/v1/catalog/datacenters', '', { resource: 'node', name: '', access: 'read' }],
    ['GET', '/v1/catalog/service/web', 'web', { resource: 'service', name: 'web', access: 'read' }],
    ['GET', '/v1/catalog/node/n1', 'n1', { resource: 'node', name: 'n1', access: 'read' }],
    // Health
    ['GET', '/v1/health/node/n1', 'n1', { resource: 'node', name: 'n1', access: 'read' }],
    ['GET', '/v1/health/service/web', 'web', { resource: 'service', name: 'web', access: 'read' }],
    ['GET', '/v1/health/checks/web', 'web', { resource: 'service', name: 'web', access: 'read' }],
    ['GET', '/v1/health/state/critical', 'critical', { resource: 'node', name: '', access: 'read' }],
    // Agent checks and services
    ['GET', '/v1/agent/checks', '', { resource: 'check', name: '', access: 'read' }],
    ['PUT', '/v1/agent/check/register', '', { resource: 'check', name: '', access: 'write', byHandler: true }],
    ['PUT', '/v1/agent/check/pass/mem', 'mem', { resource: 'check', name: 'mem', access: 'write' }],
    ['PUT', '/v1/agent/check/warn/mem', 'mem', { resource: 'check', name: 'mem', access: 'write' }],
    ['PUT', '/v1/agent/check/fail/mem', 'mem', { resource: 'check', name: 'mem', access: 'write' }],
    ['PUT', '/v1/agent/check/update/mem', 'mem', { resource: 'check', name: 'mem', access: 'write' }],
    ['PUT', '/v1/agent/check/deregister/mem', 'mem', { resource: 'check', name: 'mem', access: 'write' }],
    ['GET', '/v1/agent/services', '', { resource: 'service', name: '', access: 'read' }],
    ['PUT', '/v1/agent/service/register', '', { resource: 'service', name: '', access: 'write', byHandler: true }],
    ['PUT', '/v1/agent/service/deregister/web-1', 'web-1', { resource: 'service', name: '', access: 'write', byHandler: true }],
    ['PUT', '/v1/agent/maintenance', '', { resource: 'node', name: '', access: 'write', byHandler: true }],
    ['PUT', '/v1/agent/service/maintenance/web-1', 'web-1', { resource: 'service', name: '', access: 'write', byHandler: true }],
    // Agent, status, stream
    ['GET', '/v1/agent/self', '', { resource: 'agent', name: '', access: 'read' }],
    ['GET', '/v1/agent/metrics', '', { resource: 'agent', name: '', access: 'read' }],
    ['PUT', '/v1/agent/reload', '', { resource: 'agent', name: '', access: 'write' }],
    ['PUT', '/v1/agent/leave', '', { resource: 'agent', name: '', access: 'write' }],
    ['PUT', '/v1/agent/force-leave/n2', 'n2', { resource: 'agent', name: '', access: 'write' }],
    ['GET', '/v1/agent/members', '', { resource: 'agent', name: '', access: 'read' }],
    ['GET', '/v1/status/leader', '', { resource: 'operator', name: '', access: 'read' }],
    ['GET', '/v1/status/peers', '', { resource: 'operator', name: '', access: 'read' }],
    ['GET', '/v1/operator/log', '', { resource: 'operator', name: '', access: 'read' }],
    ['GET', '/v1/stream', '', { resource: 'agent', name: '', access: 'read', byHandler: true }],
    // Unknown paths and OPTIONS
    ['GET', '/v1/acl/tokens', '', undefined],
    ['GET', '/v1/', '', undefined],
    ['GET', '/health', '', undefined],
    ['OPTIONS', '/v1/kv/a', 'a', undefined],
  ];

  test.each(cases)('%s %s', (method, path, rest, expected) => {
    expect(accessFor(method, path, rest)).toEqual(expected);
  });

  test('a method the KV route does not serve still needs write; fixed routes keep their access', () => {
    expect(accessFor('POST', '/v1/kv/a', 'a')).toEqual({ resource: 'key', name: 'a', access: 'write' });
    expect(accessFor('get', '/v1/kv/a', 'a')).toEqual({ resource: 'key', name: 'a', access: 'read' });
    expect(accessFor('GET', '/v1/session/create', '')).toEqual({ resource: 'session', name: '', access: 'write', byHandler: true });
  });
});

describe('every route the agent serves has a rule', () => {
  test('each method of each route that is not public maps to a rule (the gate gives a route without one to operators only)', () => {
    const missing: string[] = [];
    for (const route of apiRoutes) {
      if (route.public) continue;
      const rest = route.prefix ? 'x' : '';
      for (const method of Object.keys(route.methods)) {
        if (accessFor(method, route.path + rest, rest) === undefined) missing.push(`${method} ${route.path}`);
      }
    }
    expect(missing).toEqual([]);
  });
});

describe('session ownership', () => {
  const caller = (subject: string, rules: Rule[] = []): Identity => ({ subject, rules });
  const operator: Rule = { resource: 'operator', prefix: '', access: 'write' };

  test('the creating identity may use its session; another may not, nor anyone an ownerless one', () => {
    expect(mayUseSession(caller('a'), { owner: 'a' })).toBe(true);
    expect(mayUseSession(caller('b', [{ resource: 'session', prefix: '', access: 'write' }]), { owner: 'a' })).toBe(false);
    expect(mayUseSession(caller('a'), {})).toBe(false);
  });

  test('operator write on "" stands in for any owner; operator read or a narrower prefix does not', () => {
    expect(isOperator(caller('op', [operator]))).toBe(true);
    expect(mayUseSession(caller('op', [operator]), { owner: 'a' })).toBe(true);
    expect(mayUseSession(caller('op', [operator]), {})).toBe(true);
    expect(mayUseSession(caller('r', [{ resource: 'operator', prefix: '', access: 'read' }]), { owner: 'a' })).toBe(false);
    expect(mayUseSession(caller('p', [{ resource: 'operator', prefix: 'x', access: 'write' }]), { owner: 'a' })).toBe(false);
  });
});
