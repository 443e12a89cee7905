/**
 * The fuzz suite's request families: for every endpoint, random malformed requests (fast-check arbitraries) and
 * whether the agent may accept them.
 */
import fc from 'fast-check';
import { seeded, seededCheckIds, seededServiceIds, type FuzzRequest, type Pair, enc, anyText, notUint64, hugeText, deepValue, nonString, nonJsonBytes, nonObjectJson, anyBody, withExtras, json, segment, pathTail, renderPairs, tame, readQuery, extraQuery, overrideJunk, junkHeaders, verb } from './fuzz-requests.ts';

// ---------------------------------------------------------------- families

export const readPaths = fc.oneof(
  pathTail.map((t) => `/v1/kv/${t}`),
  fc.constantFrom('/v1/kv', '/v1/session/list', '/v1/session/list/', '/v1/agent/checks', '/v1/agent/services', '/v1/agent/self',
    '/v1/agent/members', '/v1/status/leader', '/v1/status/peers', '/v1/catalog/services', '/v1/catalog/nodes', '/v1/catalog/datacenters',
    '/v1/stream', '/v1/health/state/any', '/v1/health/state/fail', '/v1/health/service/web', '/v1/health/node/node1'),
  fc.tuple(fc.constantFrom('/v1/session/info/', '/v1/session/node/', '/v1/catalog/service/', '/v1/catalog/node/', '/v1/health/node/',
    '/v1/health/checks/', '/v1/health/service/', '/v1/health/state/'), pathTail).map(([p, t]) => p + t),
);

/** Reads may be anything: GET, HEAD or OPTIONS with junk parameters and headers (an override header on GET is ignored). */
export const reads: fc.Arbitrary<FuzzRequest> = fc.record({
  method: fc.constantFrom('GET', 'GET', 'HEAD', 'OPTIONS'), path: readPaths, query: readQuery, headers: junkHeaders(true),
}).map((r) => ({ family: 'read', ...r, refuse: false }));

/** KV PUT always carries a parameter that makes it invalid, first in the query, or an empty/badly encoded key. */
export const kvPut: fc.Arbitrary<FuzzRequest> = fc.record({
  v: verb('PUT'),
  key: pathTail,
  poison: fc.oneof(
    notUint64.map((v): Pair[] => [['flags', v]]),
    notUint64.map((v): Pair[] => [['cas', v]]),
    fc.constantFrom<Pair[]>([['acquire', '']], [['acquire', null]], [['release', '']], [['release', null]]),
    fc.tuple(fc.shuffledSubarray(['cas', 'acquire', 'release'], { minLength: 2 }), fc.array(fc.oneof(fc.constant('SESSION'), fc.constant('0'), fc.uuid(), anyText), { minLength: 3, maxLength: 3 }))
      .map(([names, values]): Pair[] => names.map((n, i) => [n, values[i]!])),
  ),
  emptyKey: fc.boolean(),
  extra: extraQuery([]),
  headers: junkHeaders(false),
  body: anyBody,
}).map((r) => ({
  family: 'kv.put', method: r.v.method, path: r.emptyKey ? '/v1/kv/' : `/v1/kv/${r.key}`,
  query: tame(renderPairs(r.poison.map(([k, v]) => [k, v === 'SESSION' ? seeded.sessionId : v]), [r.extra])),
  headers: { ...r.headers, ...(r.v.override ? { 'x-http-method-override': r.v.override } : {}) }, body: r.body, refuse: true,
}));

/** KV DELETE: recurse with cas, a cas that is not a number, or an empty key without recurse. */
export const kvDelete: fc.Arbitrary<FuzzRequest> = fc.record({
  v: verb('DELETE'),
  key: pathTail,
  poison: fc.oneof(
    fc.tuple(fc.boolean(), fc.oneof(fc.constant(null), anyText), fc.oneof(fc.constant(null), anyText))
      .map(([casFirst, rv, cv]): Pair[] => (casFirst ? [['cas', cv], ['recurse', rv]] : [['recurse', rv], ['cas', cv]])),
    notUint64.map((v): Pair[] => [['cas', v]]),
    fc.constant<Pair[]>([]),
  ),
  extra: extraQuery(['recurse', 'cas']),
  headers: junkHeaders(false),
  body: anyBody,
}).map((r) => ({
  family: 'kv.delete', method: r.v.method, path: r.poison.length === 0 ? '/v1/kv/' : `/v1/kv/${r.key}`,
  query: tame(renderPairs(r.poison, [r.extra])),
  headers: { ...r.headers, ...(r.v.override ? { 'x-http-method-override': r.v.override } : {}) }, body: r.body, refuse: true,
}));

/** A field of a session create body that is invalid on its own. */
export const badSessionField: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  nonString.map((v) => ({ Name: v })),
  nonString.map((v) => ({ Node: v })),
  anyText.filter((s) => s !== '' && s !== 'node1').map((s) => ({ Node: `zz-${s}` })),
  hugeText.map((s) => ({ Node: `zz-${s}` })),
  fc.oneof(fc.constantFrom('90s', '61s', '1h', '-1s', 'abc', '1', '15', 'true', '1e3s', '5 s'), anyText.filter((s) => !/\d(ns|us|µs|ms|s|m|h)$/.test(s) || s === ''), hugeText.map((s) => `x${s}`))
    .filter((s) => !/^[-+]?0?$/.test(s)).map((s) => ({ LockDelay: s })),
  fc.oneof(fc.integer({ min: 60_000_000_001, max: Number.MAX_SAFE_INTEGER }), fc.integer({ min: -1_000_000, max: -1 }), fc.integer({ min: 61, max: 999 }))
    .map((n) => ({ LockDelay: n })),
  fc.oneof(fc.boolean(), fc.array(fc.string(), { maxLength: 2 }), deepValue).map((v) => ({ LockDelay: v })),
  fc.oneof(anyText, hugeText, nonString).filter((v) => v !== '' && v !== 'release' && v !== 'delete' && v !== null).map((v) => ({ Behavior: v })),
  fc.oneof(fc.integer({ min: 1 }), fc.boolean(), fc.constantFrom('5s', '9s', '25h', '100h', 'abc', '10', '-10s', '1e3s'), hugeText.map((s) => `x${s}`))
    .map((v) => ({ TTL: v })),
  fc.oneof(nonString.filter((v) => !Array.isArray(v) || v.some((x) => typeof x !== 'string')), fc.array(fc.string({ maxLength: 8 }).map((s) => `zz-${s}`), { minLength: 1, maxLength: 3 }))
    .map((v) => ({ NodeChecks: v })),
  fc.oneof(fc.integer(), anyText, fc.array(fc.oneof(fc.integer(), fc.constant({}), fc.record({ ID: nonString })), { minLength: 1, maxLength: 3 }))
    .map((v) => ({ ServiceChecks: v })),
  fc.oneof(fc.integer(), anyText.filter((s) => s !== ''), fc.constant({ a: 1 })).map((v) => ({ Checks: v })),
);

export const sessionCreateBody: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  { weight: 6, arbitrary: json(withExtras(badSessionField, ['Name', 'Node', 'LockDelay', 'Behavior', 'TTL', 'NodeChecks', 'ServiceChecks', 'Checks', 'ID'])) },
  { weight: 1, arbitrary: nonObjectJson },
  { weight: 1, arbitrary: nonJsonBytes },
);

/** An id in the path that is none of the given (decoded) ids. */
export function otherId(taken: () => string[]): fc.Arbitrary<string> {
  return fc.oneof(fc.uuid(), pathTail).filter((t) => {
    let decoded = t;
    try { decoded = decodeURIComponent(t); } catch { /* a broken escape: refused anyway */ }
    return !taken().includes(decoded) && !taken().includes(decoded.replace(/^serfHealth$/, 'gossipHealth'));
  });
}

export function put(family: string, path: fc.Arbitrary<string>, body: fc.Arbitrary<string | Uint8Array | undefined>, refuse: (path: string) => boolean, query: fc.Arbitrary<string> = readQuery): fc.Arbitrary<FuzzRequest> {
  return fc.record({ v: verb('PUT'), path, body, query, headers: junkHeaders(false) }).map((r) => ({
    family, method: r.v.method, path: r.path, query: r.query, body: r.body, refuse: refuse(r.path),
    headers: { ...r.headers, ...(r.v.override ? { 'x-http-method-override': r.v.override } : {}) },
  }));
}

export const always = () => true;
/** Destroy answers true for an unknown id (consul-compat §1.1): refused only with no id or a broken escape. */
export const destroyRefused = (p: string) => { const id = p.slice('/v1/session/destroy/'.length); try { return decodeURIComponent(id) === ''; } catch { return true; } };

export const sessionWrites = fc.oneof(
  put('session.create', fc.constantFrom('/v1/session/create', '/v1/session/create/'), sessionCreateBody, always),
  put('session.destroy', otherId(() => [seeded.sessionId]).map((id) => `/v1/session/destroy/${id}`), anyBody, destroyRefused),
  put('session.renew', otherId(() => [seeded.sessionId]).map((id) => `/v1/session/renew/${id}`), anyBody, always),
);

export const normCheck = (k: string) => k.toLowerCase().replace(/_/g, '');
export const checkFieldNames = ['ID', 'CheckID', 'Name', 'Notes', 'Status', 'ServiceID', 'TTL', 'HTTP', 'Method', 'Header', 'Body', 'TCP', 'GRPC',
  'Args', 'AliasService', 'AliasNode', 'Interval', 'Timeout', 'DeregisterCriticalServiceAfter', 'SuccessBeforePassing', 'OutputMaxSize'];
export const checkName = fc.oneof(fc.constant('fuzz-check'), fc.string({ minLength: 1, maxLength: 8 }).map((s) => `zz-${s}`), hugeText.map((s) => `x${s}`));

/** Per field of a TTL check definition, values that make it invalid. */
export const invalidCheckField: Record<string, fc.Arbitrary<unknown>> = {
  Name: nonString, Notes: nonString, Status: nonString, ServiceID: nonString, Method: nonString,
  TTL: fc.oneof(fc.integer({ max: -1 }), fc.boolean(), fc.constantFrom([], {}, 'abc', '-5s', '1e3', '10', '0s')),
  Interval: fc.oneof(fc.integer({ min: 1 }), fc.integer({ max: -1 }), fc.boolean(), fc.constantFrom([], 'x', '5s', '-1s', '1ms')),
  Args: fc.oneof(fc.integer(), anyText, fc.constantFrom([1], {}, [['a']])),
  Header: fc.oneof(fc.integer(), anyText, fc.constantFrom({ a: 'x' }, [], { a: [1] }, { a: null })),
  TLSSkipVerify: fc.oneof(fc.integer(), anyText, fc.constantFrom([], {})),
  FailuresBeforeCritical: fc.oneof(fc.integer({ max: -1 }), fc.double({ min: 0.1, max: 9, noNaN: true }).filter((x) => !Number.isInteger(x)), anyText, fc.boolean()),
  DeregisterCriticalServiceAfter: fc.oneof(fc.integer({ max: -1 }), fc.boolean(), fc.constantFrom('x', '-1m', {})),
};

/** A check definition that is invalid on its own (no Name counts only where no default name applies). */
export function badCheck(nameRequired: boolean): fc.Arbitrary<Record<string, unknown>> {
  const named = (o: fc.Arbitrary<Record<string, unknown>>) => fc.tuple(checkName, o).map(([Name, rest]) => ({ Name, ...rest }));
  const kinds: fc.Arbitrary<Record<string, unknown>>[] = [
    named(fc.record({ TTL: fc.constantFrom('10s', '1m'), Interval: fc.constantFrom('10s', '1s', '5m') })),
    named(fc.record({ TTL: fc.constantFrom('10s'), Status: fc.oneof(anyText.filter((s) => !['', 'passing', 'warning', 'critical'].includes(s)), nonString) })),
    named(fc.constantFrom({ HTTP: 'http://127.0.0.1:1/' }, { TCP: '127.0.0.1:1' }, { GRPC: '127.0.0.1:1' }, { HTTP: 'ftp://x', Interval: '10s' },
      { HTTP: 'not a url', Interval: '10s' }, { AliasService: 'web', TTL: '10s' }, { TTL: '0s' }, { TTL: 'abc' }, { TTL: -5 }, {},
      { TTL: '10s', HTTP: 'http://127.0.0.1:1/' }, { UDP: '127.0.0.1:1', Interval: '10s' }, { H2PING: 'x', Interval: '10s' },
      { TTL: '10s', OutputMaxSize: -1 }, { TTL: '10s', OutputMaxSize: 1e300 }, { TTL: '10s', SuccessBeforePassing: -1 }, { TTL: '10s', Interval: 'x' })),
    named(fc.oneof(...Object.entries(invalidCheckField).map(([k, a]) => a.map((v) => ({ TTL: '10s', [k]: v }))))),
    named(fc.string({ maxLength: 8 }).map((s) => ({ TTL: '10s', [`zz${s}`]: 1 }))),
  ];
  if (nameRequired) kinds.push(fc.record({ TTL: fc.constantFrom('10s', 'abc', ''), Notes: anyText }, { requiredKeys: [] }), fc.constant({ Name: '' }), fc.constant({ Name: null, TTL: '10s' }));
  return fc.oneof(...kinds);
}

export const checkBody = fc.oneof(
  { weight: 6, arbitrary: json(withExtras(badCheck(true), checkFieldNames.map((n) => `zz${n}`), normCheck)) },
  { weight: 1, arbitrary: nonObjectJson }, { weight: 1, arbitrary: nonJsonBytes }, { weight: 1, arbitrary: fc.constantFrom(undefined, '', 'null', '{}') },
);

export const checkUpdateBody = fc.oneof(
  json(withExtras(fc.oneof(
    fc.oneof(anyText.filter((s) => !['passing', 'warning', 'critical'].includes(s)), nonString, hugeText).map((Status) => ({ Status, Output: 'x' })),
    fc.record({ Status: fc.constantFrom('passing', 'warning', 'critical'), Output: nonString }),
    fc.constant({ Output: 'no status' }),
  ), ['Note', 'CheckID', 'Notes'])),
  nonObjectJson, nonJsonBytes, fc.constantFrom(undefined, '', 'null', '{}'),
);

export const checkWrites = fc.oneof(
  put('check.register', fc.constantFrom('/v1/agent/check/register', '/v1/agent/check/register/'), checkBody, always),
  put('check.deregister', otherId(() => seededCheckIds).map((id) => `/v1/agent/check/deregister/${id}`), anyBody, always),
  put('check.ttl', fc.tuple(fc.constantFrom('pass', 'warn', 'fail'), otherId(() => seededCheckIds)).map(([op, id]) => `/v1/agent/check/${op}/${id}`), anyBody, always,
    fc.tuple(fc.oneof(anyText, hugeText.map((s) => s.slice(0, 6000))), readQuery).map(([note, q]) => `note=${enc(note)}&${q}`)),
  put('check.update', fc.oneof(pathTail, fc.constantFrom(...seededCheckIds)).map((id) => `/v1/agent/check/update/${id}`), checkUpdateBody, always),
);

export const serviceFieldNames = ['ID', 'Name', 'Tags', 'Address', 'Port', 'Meta', 'TaggedAddresses', 'EnableTagOverride', 'Weights', 'Kind', 'Check', 'Checks'];
export const serviceName = fc.oneof(fc.constant('web'), fc.constant('fuzz-svc'), fc.string({ minLength: 1, maxLength: 8 }).map((s) => `zz-${s}`));

export const badService: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.record({ Tags: fc.array(fc.string(), { maxLength: 2 }), Port: fc.nat(65535), ID: fc.string() }, { requiredKeys: [] }),
  fc.constantFrom({ Name: '' }, { Name: null }, { Service: '' }),
  fc.tuple(serviceName, fc.oneof(
    fc.oneof(fc.integer({ min: 65536 }), fc.integer({ max: -1 }), fc.double({ min: 0.1, max: 100, noNaN: true }).filter((x) => !Number.isInteger(x)), anyText).map((Port) => ({ Port })),
    fc.constantFrom('0.0.0.0', '::', '[::]').map((Address) => ({ Address })),
    fc.constantFrom({ Weights: { Passing: 0 } }, { Weights: { Passing: -3, Warning: 1 } }, { Weights: { Passing: 1.5 } }, { Weights: { Warning: -1 } }, { Weights: 'heavy' }),
    fc.oneof(nonString.filter((v) => !Array.isArray(v) || v.some((x) => typeof x !== 'string')), fc.constant('a,b')).map((Tags) => ({ Tags })),
    fc.oneof(fc.constant({ a: 1 }), fc.constant({ a: null }), fc.constant([1]), fc.constant('m')).map((Meta) => ({ Meta })),
    fc.oneof(fc.integer(), anyText.filter((s) => s !== '')).map((EnableTagOverride) => ({ EnableTagOverride })),
    fc.oneof(nonString, fc.constant(5)).map((ID) => ({ ID })),
    fc.oneof(fc.constant('lan'), fc.constant({ lan: 5 }), fc.constant({ lan: { Address: 5 } })).map((TaggedAddresses) => ({ TaggedAddresses })),
    badCheck(false).map((Check) => ({ Check })),
    fc.tuple(badCheck(false), fc.nat(2)).map(([c, at]) => ({ Checks: ([{ TTL: '10s' }, { TTL: '20s' }] as Record<string, unknown>[]).toSpliced(at, 0, c) })),
    fc.oneof(fc.constant({ TTL: '10s' }), anyText, fc.integer()).map((Checks) => ({ Checks })),
    fc.string({ maxLength: 8 }).map((s) => ({ [`zz${s}`]: true })),
  )).map(([Name, rest]) => ({ Name, ...rest })),
);

export const serviceBody = fc.oneof(
  { weight: 6, arbitrary: json(withExtras(badService, serviceFieldNames.map((n) => `zz${n}`), normCheck)) },
  { weight: 1, arbitrary: nonObjectJson }, { weight: 1, arbitrary: nonJsonBytes }, { weight: 1, arbitrary: fc.constantFrom(undefined, '', 'null', '{}') },
);

export const serviceWrites = fc.oneof(
  put('service.register', fc.constantFrom('/v1/agent/service/register', '/v1/agent/service/register/'), serviceBody, always,
    fc.tuple(fc.option(fc.constantFrom('replace-existing-checks', 'replace-existing-checks=true', 'replace-existing-checks=junk')), readQuery).map(([r, q]) => [r, q].filter(Boolean).join('&'))),
  put('service.deregister', otherId(() => seededServiceIds).map((id) => `/v1/agent/service/deregister/${id}`), anyBody, always),
);

export const catalogRegisterBody = fc.oneof(
  json(withExtras(fc.oneof(
    fc.record({ Address: fc.constantFrom('10.0.0.9', ''), Check: fc.constant({ Name: 'c', Status: 'passing' }) }, { requiredKeys: [] }),
    fc.record({ Node: fc.constantFrom('fuzz-node', 'node1'), Address: fc.oneof(fc.constant(''), nonString) }),
    fc.record({ Node: nonString, Address: fc.constant('10.0.0.9') }),
    fc.tuple(fc.constantFrom('fuzz-node', 'node1'), fc.oneof(
      fc.record({ Service: fc.oneof(fc.constant({ Service: 'x' }), fc.constant('x'), fc.integer()) }),
      fc.oneof(anyText.filter((s) => !['', 'passing', 'warning', 'critical'].includes(s)), hugeText.map((s) => `x${s}`)).map((Status) => ({ Check: { Name: 'c', Status } })),
      fc.constantFrom({ Check: { Name: '' } }, { Check: { CheckID: 'c' } }, { Check: { Name: 'c', ServiceID: 'web' } }, { Check: 'c' }, { Check: [1] },
        { Checks: {} }, { Checks: 'c' }, { Checks: [{ Name: 'ok', Status: 'passing' }, null] }, { Check: { Name: 5 } }, { NodeMeta: { a: 1 } }, { NodeMeta: [] }),
      deepValue.map((v) => ({ Check: { Name: 'c', Notes: v } })),
    )).map(([Node, rest]) => ({ Node, Address: '10.0.0.9', ...rest })),
  ), ['ID', 'Datacenter', 'TaggedAddresses', 'NodeMeta', 'Check', 'Checks', 'Service', 'SkipNodeUpdate'])),
  nonObjectJson, nonJsonBytes, fc.constantFrom(undefined, '', 'null', '{}'),
);

export const catalogDeregisterBody = fc.oneof(
  json(withExtras(fc.oneof(
    fc.record({ CheckID: fc.oneof(fc.constant('seed-ttl'), anyText) }, { requiredKeys: [] }),
    fc.oneof(fc.constant(''), nonString).map((Node) => ({ Node })),
    fc.tuple(fc.constantFrom('node1', 'fuzz-node'), nonString.filter((v) => v !== null)).map(([Node, CheckID]) => ({ Node, CheckID })),
    fc.tuple(fc.constantFrom('node1', 'fuzz-node'), fc.oneof(fc.constant('web'), anyText, nonString).filter((v) => v !== null)).map(([Node, ServiceID]) => ({ Node, ServiceID })),
  ), ['CheckID', 'ServiceID', 'Datacenter'])),
  nonObjectJson, nonJsonBytes, fc.constantFrom(undefined, '', 'null', '{}'),
);

export const catalogWrites = fc.oneof(
  put('catalog.register', fc.constantFrom('/v1/catalog/register', '/v1/catalog/register/'), catalogRegisterBody, always),
  put('catalog.deregister', fc.constantFrom('/v1/catalog/deregister', '/v1/catalog/deregister/'), catalogDeregisterBody, always),
);

/** Known paths with a method they do not allow (405), including POST whose override header names no write verb. */
export const wrongMethods: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc.record({ method: fc.constantFrom('PUT', 'DELETE', 'POST', 'PATCH'), path: fc.constantFrom('/v1/session/list', '/v1/agent/checks', '/v1/agent/services',
    '/v1/agent/self', '/v1/status/leader', '/v1/catalog/nodes', '/v1/catalog/services', '/v1/health/state/any', '/v1/session/info/x', '/v1/health/node/node1') }),
  fc.record({ method: fc.constantFrom('GET', 'HEAD', 'DELETE', 'POST', 'PATCH'), path: fc.constantFrom('/v1/session/create', '/v1/session/destroy/x',
    '/v1/session/renew/x', '/v1/agent/check/register', '/v1/agent/check/pass/seed-ttl', '/v1/agent/check/fail/seed-ttl', '/v1/agent/check/deregister/seed-ttl',
    '/v1/agent/service/register', '/v1/agent/service/deregister/web', '/v1/catalog/register', '/v1/catalog/deregister') }),
  fc.record({ method: fc.constantFrom('POST', 'PATCH'), path: pathTail.map((t) => `/v1/kv/${t}`) }),
).chain((r) => fc.record({
  query: readQuery, body: anyBody,
  headers: fc.tuple(junkHeaders(false), overrideJunk.filter((o) => !['PUT', 'DELETE'].includes(o.trim().toUpperCase())))
    .map(([h, o]) => ({ ...h, ...(r.method === 'POST' && o.trim() !== '' ? { 'x-http-method-override': o } : {}) })),
}).map((x) => ({ family: 'wrong-method', ...r, ...x, refuse: true })));

/** Paths no route serves, with any method; their first segment after /v1/ never names a family. */
export const unknownPaths: fc.Arbitrary<FuzzRequest> = fc.record({
  method: fc.constantFrom('GET', 'PUT', 'DELETE', 'POST', 'PATCH'),
  path: fc.oneof(
    fc.tuple(fc.constantFrom('/v1/zz', '/v1/kvx', '/v2/kv/', '/V1/kv/', '/v1/session/createx', '/v1/agent/check/registerx', '/v1/catalogue/', '/v0/', '/'), pathTail).map(([p, t]) => p + t),
    segment.filter((s) => !s.toLowerCase().startsWith('v1')).map((s) => `/${s}`),
  // `/` and `/ui...` are the dashboard's (redirects and public files), not unknown paths.
  ).filter((p) => p !== '/' && !/^\/ui(\/|%2f|$)/i.test(p)),
  query: readQuery, body: anyBody, headers: junkHeaders(true),
}).map((r) => ({ family: 'unknown-path', ...r, body: r.method === 'GET' ? undefined : r.body, refuse: true }));

export const requests = fc.oneof(
  { weight: 4, arbitrary: reads },
  { weight: 3, arbitrary: kvPut },
  { weight: 2, arbitrary: kvDelete },
  { weight: 3, arbitrary: sessionWrites },
  { weight: 3, arbitrary: checkWrites },
  { weight: 2, arbitrary: serviceWrites },
  { weight: 2, arbitrary: catalogWrites },
  { weight: 1, arbitrary: wrongMethods },
  { weight: 1, arbitrary: unknownPaths },
);
