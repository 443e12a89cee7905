// Goal: the error catalogue (src/domain/errors.ts) is complete — every named error has a public code, a
// seed status, a Consul status and both dialects' texts — and a throw site renders the same bytes in
// both dialects as the texts written out here, checked on the pure modules with no server.
import { describe, expect, test } from 'vitest';
import { errorCatalogue, errorKinds, RegistryError, type ErrorName, type ErrorVars } from '../../src/domain/errors.ts';
import { brokenRule, fieldRules, type FieldRuleName, type FieldRuleVars } from '../../src/domain/field-rules.ts';
import { FieldErrors } from '../../src/http/body.ts';
import { renderError } from '../../src/http/render.ts';

const reason = { reason: 'r' };
const rule = { rule: 'must be a duration' };
const access = { resource: 'key', name: 'a', access: 'write' };

/** Variables for every entry: a new entry without a sample here does not compile. */
const samples: { [N in ErrorName]: ErrorVars<N> } = {
  permissionDenied: access, tokenMissing: { why: 'w', credentials: 'missing' }, tokenInvalid: { why: 'w', credentials: 'invalid' },
  tokenExpired: { why: 'w', credentials: 'expired', challenge: 'Bearer' }, signatureMissing: { why: 'w', signature: 'missing' },
  signatureBadMethod: { why: 'w', signature: 'bad_method' }, signatureBadTimestamp: { why: 'w', signature: 'bad_timestamp' },
  signatureBadNonce: { why: 'w', signature: 'bad_nonce' },
  signatureUnknownKey: { why: 'w', signature: 'unknown_key' }, signatureUnsignedParameter: { why: 'w', signature: 'unsigned_parameter' },
  signatureBad: { why: 'w', signature: 'bad_signature' }, signatureStale: { why: 'w', signature: 'stale' },
  signatureReplayed: { why: 'w', signature: 'replayed' }, signatureBusy: { why: 'w', retryAfterSeconds: 2 },
  sessionNotOwned: { session: 's', subject: 'u' }, rateLimited: { retryAfterSeconds: 3 }, tooManyInFlight: { address: '::1', max: 2 },
  writesOverloaded: undefined, hostNotAllowed: { host: 'rebind.example:8500' }, contentLengthsDiffer: undefined, credentialHeaderRepeated: { header: 'Authorization' }, transferEncodingUnsupported: { coding: 'gzip' },
  requestNotUtf8: { where: 'path' }, pathEncodingMalformed: { path: '/%zz' }, bodyTooLarge: { size: 2, max: 1 },
  bodyTimeout: { bodyTimeoutMs: 5 }, snapshotInvalid: { why: 'w' }, snapshotTooLarge: { why: 'w' }, apiVersionInvalid: undefined, noEndpoint: { method: 'GET', path: '/x' },
  noPage: { method: 'GET', path: '//' }, methodNotAllowed: { method: 'PUT', allowed: ['OPTIONS', 'GET'] }, contentTypeMissing: undefined,
  mediaTypeUnsupported: { contentType: 'text/plain' }, notAcceptable: { accept: 'application/xml', offered: ['application/json'] }, bodyNotJson: { why: 'w' }, bodyNotObject: { got: 'array', goType: 'structs.Session' },
  fieldsInvalid: { fields: { TTL: ['Format:bad'] } }, fieldsMissing: { fields: { Name: ['Required:x'] } }, indexInvalid: undefined, waitInvalid: rule,
  maxStaleInvalid: { ...rule, value: 'x' }, staleWithConsistent: undefined, cachedWithConsistent: undefined, cacheControlInvalid: { directive: 'max-age' }, noPathToDatacenter: { dc: 'dc9' },
  filterInvalid: { why: 'w' }, listParameterInvalid: { field: 'page', rule: 'Format', why: 'w' }, passingInvalid: { value: 'x' },
  segmentWithWan: undefined, metricsFormatInvalid: { format: 'xml' }, monitorLevelInvalid: { level: 'loud' }, monitorsFull: { max: 64 }, debugDisabled: undefined, profileSecondsInvalid: { text: 'x', max: 300 }, profileBusy: { kind: 'CPU' }, writeOutcomeUnknown: undefined, entryTooLarge: { bytes: 2, max: 1 }, streamOriginRefused: { origin: 'https://evil.example' }, checkIdReserved: { checkId: 'gossipHealth' }, checkOwnerDenied: { checkId: 'service:db' }, nodeServiceDenied: { node: 'n1' }, serviceIdDenied: { id: 'db1' }, aliasServiceDenied: { serviceId: 'db1', node: 'n1' },
  agentServiceUnknown: { id: 's' }, agentHealthIdMissing: undefined, agentHealthNameMissing: undefined, agentHealthIdUnknown: { id: 's' }, agentHealthNameUnknown: { name: 's' }, kvKeyMissing: undefined, kvKeyNotFound: { key: 'k' },
  kvUint64Invalid: { name: 'cas', text: 'x' }, kvSessionMissing: { name: 'acquire' },
  kvFlagsConflict: { given: ['cas', 'acquire'], exclusive: ['cas', 'acquire', 'release'], query: 'acquire=s&cas=1' },
  kvSessionInvalid: { session: 's' }, casMismatch: reason, lockNotAcquired: reason, lockNotReleased: reason, kvWriteFailed: reason,
  preconditionFailed: { header: 'If-Match', reason: 'not-matched', why: 'w' }, readPreconditionFailed: { header: 'If-Unmodified-Since', reason: 'modified', why: 'w' }, preconditionUnsupported: { given: 'acquire' },
  txnBodyInvalid: { why: 'w' }, txnOpsTooMany: { count: 65, max: 64 },
  txnOpNotKv: { opIndex: 0, kind: 'Node' }, txnFailed: { errors: [{ opIndex: 0, what: 'w' }] },
  sessionIdMissing: undefined, sessionMissing: undefined, sessionNotFound: { id: 's' }, sessionNodeUnknown: { node: 'n' },
  sessionCheckUnknown: { check: 'c' }, sessionCheckCritical: { check: 'c' }, sessionCreateFailed: reason, checkIdMissing: undefined,
  serviceIdMissing: undefined, serviceMissing: undefined, nodeMissing: undefined, checkStateMissing: undefined,
  checkNotFound: { id: 'c' }, serviceNotFound: { id: 's' }, checkServiceNotFound: { id: 's' }, registrationFailed: reason,
  maintenanceEnableMissing: undefined, maintenanceEnableInvalid: { value: 'yes' }, reloadFailed: reason, memberNotFound: { node: 'n' },
  checkNotTtl: { checkId: 'c', type: 'http' }, checkStatusInvalid: { status: 'up' },
  checkStateUnknown: { state: 'up' }, deregisterNodeMissing: undefined, nodeNameReserved: { node: 'n1', id: 'a', holderId: 'b', holder: 'N1', address: '10.0.0.1' }, nodeIdTaken: { id: 'a', holder: 'n2' }, nodeIdHeld: { id: 'a', holder: 'n2', address: '10.0.0.1' }, deregisterCheckIdNotString: undefined,
  deregisterServiceUnsupported: undefined, definitionFieldUnknown: { field: 'Foo', what: 'check definition' },
  definitionNotObject: { what: 'service definition' }, checksNotArray: undefined, scriptChecksDisabled: { remote: true },
  uiNotBuilt: { dir: 'dist/ui' }, uiNoFile: { path: '/ui/x' }, uiPathEscapes: undefined,
  streamSubprotocolUnsupported: { use: 'registry.stream.v1', offered: ['x'] }, streamForbidden: { resources: ['key'] },
  streamConnectionsFull: { max: 1 }, streamClientConnectionsFull: { max: 1 }, streamUpgradeRequired: { version: '13' }, authenticationFailed: undefined,
  logOverloaded: undefined, diskFull: undefined, descriptorsShort: undefined, dataDirRemoved: undefined, dataDirUnusable: undefined, logStreamGone: undefined, logStorageFull: undefined, answersBusy: undefined, stateQuotaExceeded: { stateBytes: 2048, stateBytesMax: 1024 }, logFailed: undefined, writeTimedOut: { timeoutMs: 30_000 }, snapshotBarrierRefused: { refusal: { message: 'm', consulText: 'c', headers: [['Retry-After', '1']] } }, internal: { why: 'w' },
  clusterBehind: { what: 'a transaction (PUT /v1/txn)', needs: 2, behind: [{ node: 'n2', level: 1, status: 'alive' }] },
};

const make = <N extends ErrorName>(name: N): RegistryError => new (RegistryError as new (n: N, v: ErrorVars<N>) => RegistryError)(name, samples[name]);

describe('every entry of the catalogue', () => {
  test.each(Object.keys(errorCatalogue) as ErrorName[])('%s has a code, both statuses and both texts', (name) => {
    const err = make(name);
    expect(errorKinds[err.kind].code).toBe(err.code);
    expect(err.code).toBeGreaterThan(0);
    expect(err.status).toBeGreaterThanOrEqual(400);
    expect(err.consulStatus).toBeGreaterThanOrEqual(200);
    expect(err.message.length).toBeGreaterThan(0);
    expect(err.consulText.length).toBeGreaterThan(0);
    const seed = renderError(err, 'seed');
    const consul = renderError(err, 'consul');
    expect(JSON.parse(seed.body as string)).toMatchObject({ code: err.code, message: err.message });
    expect(consul.body).toBe(err.consulText);
    expect([seed.status, consul.status]).toEqual([err.status, err.consulStatus]);
  });
});

describe('throw sites render the same bytes as before the catalogue', () => {
  test('a KV flag conflict (variables in the message, the details and the Consul text)', () => {
    const err = make('kvFlagsConflict');
    expect(renderError(err, 'seed')).toEqual({
      status: 400, headers: [['Content-Type', 'application/json']],
      body: '{"code":1009,"message":"conflicting flags: cas and acquire cannot be combined","details":{"cas":["Conflict:only one of cas, acquire, release may be given"],"acquire":["Conflict:only one of cas, acquire, release may be given"]}}',
    });
    expect(renderError(err, 'consul')).toEqual({ status: 400, headers: [['Content-Type', 'text/plain; charset=utf-8']], body: 'Conflicting flags: acquire=s&cas=1\n' });
  });

  test('a path no route serves: Consul says whether it is under /v1/', () => {
    expect(renderError(new RegistryError('noEndpoint', { method: 'GET', path: '/v1/nope' }), 'consul').body).toBe('Invalid URL path: not a recognized HTTP API endpoint\n');
    expect(renderError(new RegistryError('noEndpoint', { method: 'GET', path: '/nope' }), 'consul').body)
      .toBe("Invalid URL path: if attempting to use the HTTP API, ensure the path starts with '/v1/'\n");
    expect(renderError(new RegistryError('noPage', { method: 'GET', path: '//' }), 'consul')).toEqual({
      status: 404, headers: [['Content-Type', 'text/plain; charset=utf-8']], body: 'no endpoint at GET //',
    });
  });

  test('a refusal with headers: 429 in both dialects with Retry-After, and a 405 with Allow', () => {
    const limited = new RegistryError('rateLimited', { retryAfterSeconds: 7 });
    expect(renderError(limited, 'seed')).toEqual({
      status: 429, headers: [['Content-Type', 'application/json'], ['Retry-After', '7']],
      body: '{"code":1022,"message":"rate limit exceeded: retry in 7s","details":{"retryAfterSeconds":7}}',
    });
    expect(renderError(limited, 'consul')).toEqual({ status: 429, headers: [['Content-Type', 'text/plain; charset=utf-8'], ['Retry-After', '7']], body: 'rate limit exceeded' });
    const method = new RegistryError('methodNotAllowed', { method: 'PUT', allowed: ['OPTIONS', 'GET', 'HEAD'] });
    expect(renderError(method, 'consul')).toEqual({
      status: 405, headers: [['Content-Type', 'text/plain; charset=utf-8'], ['Allow', 'OPTIONS,GET,HEAD']], body: 'method PUT not allowed',
    });
  });

  test('gathered field errors: one field names its rule, several are listed; Consul takes the first text given', () => {
    const one = new RegistryError('fieldsInvalid', { fields: { TTL: ['Format:must be a duration'] } });
    expect(one.message).toBe('invalid TTL: must be a duration');
    expect(renderError(one, 'consul')).toMatchObject({ status: 400, body: 'Request decode failed: invalid TTL' });
    const two = new RegistryError('fieldsInvalid', { fields: { Name: ['Required:x'], Port: ['Range:y'] }, consul: { status: 400, text: 'Missing service name' } });
    expect(two.message).toBe('invalid fields: Name, Port');
    expect(renderError(two, 'consul').body).toBe('Missing service name');
  });

  test('an error without details has none in its seed body; the Consul text defaults to the message', () => {
    expect(renderError(new RegistryError('internal', { why: 'boom' }), 'seed').body).toBe('{"code":999,"message":"internal error: boom"}');
    expect(renderError(new RegistryError('lockNotAcquired', reason), 'consul')).toMatchObject({ status: 200, body: 'did not acquire lock' });
  });

  test('a bearer token refusal carries its challenge only when one is given', () => {
    expect(new RegistryError('tokenInvalid', { why: 'bad', credentials: 'invalid' }).headers).toEqual([]);
    const challenged = new RegistryError('tokenExpired', { why: 'old', credentials: 'expired', challenge: 'Bearer error="invalid_token"' });
    expect(renderError(challenged, 'seed')).toEqual({
      status: 401, headers: [['Content-Type', 'application/json'], ['WWW-Authenticate', 'Bearer error="invalid_token"']],
      body: '{"code":1005,"message":"old","details":{"credentials":"expired"}}',
    });
    expect(renderError(challenged, 'consul')).toMatchObject({ status: 403, body: 'ACL not found' });
  });
});

const goField = { goField: 'Interval' };
/** Variables for every field rule: a new rule without a sample here does not compile. */
const ruleSamples: { [N in FieldRuleName]: FieldRuleVars<N> } = {
  notString: goField, notBool: goField, notInteger: goField, notStrings: goField, notStringMap: goField, notHeaderMap: goField, valueNotString: { goField: 'checkUpdate.Status', got: 'number' }, fieldUnknown: { field: 'Note' },
  durationInvalid: { rule: 'Format', text: 'must be a duration', goError: 'time: invalid duration "x"' }, checkInvalid: { text: 't' }, outputMaxSizeNegative: undefined,
  failuresBeforeWarningAboveCritical: { critical: 2 }, checkNameMissing: undefined,
  checkStatusBad: { inService: true }, checkHttpInvalid: { why: 'w' }, checkTcpInvalid: { why: 'w' }, checkGrpcInvalid: { why: 'w' },
  checkKindsConflict: { kinds: 'http and tcp' }, checkMethodInvalid: { method: '"G T"', goMethod: '"G T"' }, checkHeaderNameInvalid: { name: '"X Y"', goName: '"X Y"' },
  checkHeaderValueInvalid: { name: '"X"', goName: '"X"' }, checkHeaderValueNotAscii: { name: '"X"', goName: '"X"' },
  serviceNameMissing: undefined, serviceAddressUnspecified: undefined, weightsInvalid: { why: 'w' }, serviceMetaInvalid: { why: 'w' }, nodeNameMissing: undefined,
  nodeAddressMissing: undefined, nodeIdInvalid: { why: 'uuid string is wrong length' }, sessionTtlNotString: undefined, sessionTtlInvalid: { tooLong: false, ttlMsMin: 10_000, value: 'x', goError: 'time: invalid duration "x"' },
  lockDelayInvalid: { goError: 'time: invalid duration "x"' }, sessionTtlOutOfRange: { ttlMsMin: 10_000, ns: 5, minText: '10s' },
  sessionBehaviorInvalid: { value: 'keep' }, sessionStringsInvalid: { name: 'NodeChecks' }, sessionServiceChecksInvalid: undefined,
  sessionFieldNotString: { name: 'Node', got: 'number' },
};

describe('field rules', () => {
  test.each(Object.keys(fieldRules) as FieldRuleName[])('%s has a rule, a text and Consul\'s answer', (name) => {
    const broken = (brokenRule as (n: FieldRuleName, v: unknown) => ReturnType<typeof brokenRule>)(name, ruleSamples[name]);
    expect(broken.rule).toMatch(/^[A-Z][a-z]+$/);
    expect(broken.text.length).toBeGreaterThan(0);
    expect(broken.consul.text.length).toBeGreaterThan(0);
    expect([400, 500]).toContain(broken.consul.status);
  });

  test('gathered rules answer with every detail (seed) and the first Consul text given (consul)', () => {
    const errors = new FieldErrors();
    errors.add('Port', 'Range', 'must be at most 65535');
    errors.broke('TTL', 'sessionTtlInvalid', { tooLong: false, ttlMsMin: 10_000, value: 'soon', goError: 'time: invalid duration "soon"' });
    errors.broke('Name', 'serviceNameMissing');
    let thrown: unknown;
    try {
      errors.throwIfAny();
    } catch (err) {
      thrown = err;
    }
    const err = thrown as RegistryError;
    expect(renderError(err, 'seed')).toEqual({
      status: 400, headers: [['Content-Type', 'application/json']],
      body: '{"code":1009,"message":"invalid fields: Port, TTL, Name","details":{"Port":["Range:must be at most 65535"],"TTL":["Format:must be a duration such as 30s"],"Name":["Required:a service needs a name"]}}',
    });
    expect(renderError(err, 'consul')).toEqual({
      // Consul's 500 for a request the seed dialect refuses 400: the request's fault, not the agent's.
      status: 500, headers: [['Content-Type', 'text/plain; charset=utf-8']], body: 'Session TTL \'soon\' invalid: time: invalid duration "soon"', callerFault: true,
    });
  });
});
