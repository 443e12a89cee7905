/**
 * One error catalogue. `errorKinds` are the classes of http-conventions.md: public code and HTTP status
 * (the seed dialect), the status Consul uses for the class (the consul dialect) and a gRPC status code.
 * `errorCatalogue` names every error the agent answers with: its class, and both dialects' texts (the
 * seed message with its `details`, and Consul's plain-text body and status where they differ from the
 * class's), each a function of the error's own variables. A throw site names the error and passes its
 * variables only: `throw new RegistryError('kvKeyNotFound', { key })`. The field rules a 1008 or 1009
 * answer gathers, with Consul's text for each, are the catalogue's other table (field-rules.ts).
 * Expected failures ("did not acquire lock") are values of this type; broken invariants are assertions.
 * The classes and the helpers entries are written with live in error-kinds.ts; the KV and transaction
 * entries in errors-kv.ts, the agent diagnostics' in errors-agent.ts and the log's in errors-log.ts, spread
 * into the catalogue here.
 */
import { entry, errorKinds, fieldRefusal, missingInPath, rule, signatureRefusal, text, tokenRefusal, type ErrorEntry, type ErrorKind, type Reason } from './error-kinds.ts';
import { agentErrorCatalogue } from './errors-agent.ts';
import { kvErrorCatalogue } from './errors-kv.ts';
import { logErrorCatalogue } from './errors-log.ts';

export { errorKinds } from './error-kinds.ts';
export type { ErrorEntry, ErrorKind, ErrorText, FieldDetails } from './error-kinds.ts';
export type { TxnOpError } from './errors-kv.ts';

const retryAfter = (seconds: number): [string, string][] => [['Retry-After', String(seconds)]];

/** A field of `rule` with a Go-duration rule text (the rule is the duration parser's). */
type DurationRule = { rule: string };

/** A 503 asking to retry in a second. */
const busy = (message: string, consulText: string) => entry({
  kind: 'remoteUnavailable', message, details: () => ({ retryAfterSeconds: 1 }), status: 503, consulStatus: 503, consulText, headers: () => retryAfter(1),
});

export const errorCatalogue = {
  // ------------------------------------------------------------ admission: authentication, limits
  permissionDenied: entry<{ resource: string; name: string; access: string }>({
    kind: 'insufficientPermission', message: (v) => `permission denied: ${v.access} on ${v.resource} "${v.name}"`,
    details: (v) => ({ resource: v.resource, name: v.name, access: v.access }), consulText: 'Permission denied',
  }),
  tokenMissing: tokenRefusal('notLoggedIn'), tokenInvalid: tokenRefusal('invalidToken'), tokenExpired: tokenRefusal('tokenExpired'),
  signatureMissing: signatureRefusal('missingParameter'), signatureBadMethod: signatureRefusal('invalidParameter'),
  signatureBadTimestamp: signatureRefusal('invalidParameter'), signatureBadNonce: signatureRefusal('invalidParameter'),
  signatureUnknownKey: signatureRefusal('unknownUser'),
  signatureUnsignedParameter: signatureRefusal('illegalRequest'), signatureBad: signatureRefusal('illegalRequest'),
  signatureStale: signatureRefusal('expiredRequest'), signatureReplayed: signatureRefusal('expiredRequest'),
  signatureBusy: entry<{ why: string; retryAfterSeconds: number }>({
    kind: 'remoteUnavailable', message: (v) => `request signature refused: ${v.why}`,
    details: (v) => ({ signature: 'busy', retryAfterSeconds: v.retryAfterSeconds }), consulStatus: 503, consulText: (v) => v.why,
    headers: (v) => retryAfter(v.retryAfterSeconds),
  }),
  sessionNotOwned: entry<{ session: string; subject: string }>({
    kind: 'insufficientPermission', message: (v) => `permission denied: session "${v.session}" is not owned by "${v.subject}" (nor is it an operator)`,
    details: (v) => ({ session: v.session, access: 'owner' }), consulText: 'Permission denied',
  }),
  rateLimited: entry<{ retryAfterSeconds: number }>({
    kind: 'illegalRequest', message: (v) => `rate limit exceeded: retry in ${v.retryAfterSeconds}s`, details: (v) => ({ retryAfterSeconds: v.retryAfterSeconds }),
    status: 429, consulStatus: 429, consulText: 'rate limit exceeded', headers: (v) => retryAfter(v.retryAfterSeconds),
  }),
  tooManyInFlight: entry<{ address: string; max: number }>({
    kind: 'illegalRequest', message: (v) => `too many requests in flight from ${v.address}: at most ${v.max}`,
    details: (v) => ({ requestsInFlightMax: v.max, retryAfterSeconds: 1 }), status: 429, consulStatus: 429,
    consulText: 'Your IP is issuing too many concurrent connections, please rate limit your calls\n', headers: () => retryAfter(1),
  }),
  writesOverloaded: busy('too many writes in flight; retry shortly', 'server overloaded'),
  hostNotAllowed: entry<{ host: string }>({
    kind: 'illegalRequest', status: 421, consulStatus: 421,
    message: (v) => `this agent does not answer to the host ${JSON.stringify(v.host.slice(0, 200))}: reach it by an IP address or localhost, or add the name to http_allowed_hosts (--http-allowed-hosts)`,
    details: (v) => ({ host: v.host.slice(0, 200), setting: 'http_allowed_hosts' }),
    consulText: (v) => `Host ${JSON.stringify(v.host.slice(0, 200))} is not allowed: add it to http_allowed_hosts\n`,
  }),

  // ------------------------------------------------------------ the request's head and body
  contentLengthsDiffer: entry({
    kind: 'illegalRequest', message: 'the request has Content-Length headers that differ', details: () => rule('Content-Length', 'Conflict:send one Content-Length'),
    consulText: 'conflicting Content-Length headers',
  }),
  credentialHeaderRepeated: entry<{ header: string }>({
    kind: 'illegalRequest', message: (v) => `the request has more than one ${v.header} header: send your credentials once`,
    details: (v) => rule(v.header, 'Conflict:send one'), consulText: (v) => `Request has more than one ${v.header} header`,
  }),
  transferEncodingUnsupported: entry<{ coding: string }>({
    kind: 'illegalRequest', message: (v) => `Transfer-Encoding ${JSON.stringify(v.coding)} is not supported: send the body with Content-Length or Transfer-Encoding: chunked`,
    details: (v) => rule('Transfer-Encoding', `Unsupported:${v.coding}`), consulText: (v) => `unsupported transfer encoding: ${JSON.stringify(v.coding)}`,
  }),
  requestNotUtf8: entry<{ where: 'path' | 'query' }>({
    kind: 'illegalRequest', message: (v) => `the request ${v.where} is not valid UTF-8: send UTF-8, percent-encoded`,
    details: (v) => rule(v.where, 'Encoding:not valid UTF-8'), consulText: (v) => `invalid UTF-8 in request ${v.where}`,
  }),
  pathEncodingMalformed: entry<{ path: string }>({
    kind: 'illegalRequest', message: (v) => `malformed percent-encoding in path: ${v.path}`, details: () => rule('path', 'Encoding:malformed percent-encoding'),
    consulText: 'invalid URL escape in path',
  }),
  bodyTooLarge: entry<{ size: number; max: number }>({
    kind: 'inputTooLong', message: (v) => `request body of ${v.size} bytes is larger than the limit of ${v.max} bytes`, details: (v) => ({ size: v.size, max: v.max }),
   
    consulText: (v) => `Request body(${v.size} bytes) too large, max size: ${v.max} bytes. See https://developer.hashicorp.com/consul/docs/agent/config/config-files#kv_max_value_size.`,
  }),
  bodyTimeout: entry<{ bodyTimeoutMs: number }>({
    kind: 'requestTimeout', message: (v) => `the request body did not arrive within ${v.bodyTimeoutMs} ms`, details: (v) => ({ bodyTimeoutMs: v.bodyTimeoutMs }),
    consulText: 'request body timeout',
  }),
  snapshotInvalid: entry<{ why: string }>({
    kind: 'illegalRequest', message: (v) => `snapshot refused, nothing changed: ${v.why}`, details: (v) => rule('body', `Snapshot:${v.why}`),
    consulText: (v) => `Error restoring snapshot: ${v.why}`,
  }),
  snapshotTooLarge: entry<{ why: string }>({
    kind: 'inputTooLong', message: (v) => `snapshot refused, nothing changed: it does not fit one log entry (${v.why})`, details: (v) => ({ body: [`Size:${v.why}`] }),
    consulText: (v) => `Error restoring snapshot: too large for one log entry (${v.why})`,
  }),
  apiVersionInvalid: entry({ kind: 'invalidParameter', message: 'x-api-version must be a calendar date written yyyyMMdd, such as 20240229', details: () => rule('x-api-version', 'Format:must be a calendar date yyyyMMdd') }),
  noEndpoint: entry<{ method: string; path: string }>({
    kind: 'notFound', message: (v) => `no endpoint at ${v.method} ${v.path}`, details: (v) => ({ path: v.path }),
    consulText: (v) => (v.path.includes('/v1/')
      ? 'Invalid URL path: not a recognized HTTP API endpoint\n'
      : "Invalid URL path: if attempting to use the HTTP API, ensure the path starts with '/v1/'\n"),
  }),
  /** A path the root route does not serve (`//`): answered as Consul answers, with the message itself. */
  noPage: entry<{ method: string; path: string }>({ kind: 'notFound', message: (v) => `no endpoint at ${v.method} ${v.path}`, details: (v) => ({ path: v.path }) }),
  methodNotAllowed: entry<{ method: string; allowed: string[] }>({
    kind: 'methodNotAllowed', message: (v) => `method ${v.method} not allowed`, details: (v) => ({ allowed: v.allowed }),
    consulText: (v) => `method ${v.method} not allowed`, headers: (v) => [['Allow', v.allowed.join(',')]],
  }),
  contentTypeMissing: entry({
    kind: 'headerMissing', message: 'the Content-Type header is required: send application/json;charset=utf-8',
    details: () => rule('Content-Type', 'Required:send application/json;charset=utf-8'),
  }),
  mediaTypeUnsupported: entry<{ contentType: string }>({
    kind: 'unsupportedMediaType', message: (v) => `unsupported media type ${JSON.stringify(v.contentType)}: this endpoint takes application/json;charset=utf-8`,
    details: (v) => ({ 'Content-Type': [`MediaType:${v.contentType}`], accepted: ['application/json;charset=utf-8'] }), consulText: 'Unsupported Media Type',
  }),
  /** The request's Accept allows none of the media types of the answer (`offered`); never in the consul dialect, which ignores Accept. */
  notAcceptable: entry<{ accept: string; offered: string[] }>({
    kind: 'unsupportedMediaType', status: 406, consulStatus: 406, consulText: 'Not Acceptable',
    message: (v) => `not acceptable: Accept ${JSON.stringify(v.accept)} allows none of ${v.offered.join(', ')}, the media types this answer has`,
    details: (v) => ({ Accept: [`MediaType:${v.accept}`], offered: v.offered }),
  }),
  bodyNotJson: entry<{ why: string }>({
    kind: 'illegalJson', message: (v) => `request body is not valid JSON: ${v.why}`, details: (v) => rule('body', `JSON:${v.why}`),
    consulText: (v) => `Request decode failed: ${v.why}`,
  }),
  /** `goType`: the Go type Consul decodes the route's body into, which its text names. */
  bodyNotObject: entry<{ got: string; goType: string }>({
    kind: 'illegalJson', message: 'request body must be a JSON object', details: () => rule('body', 'Type:must be a JSON object'),
    consulText: (v) => `Request decode failed: json: cannot unmarshal ${v.got} into Go value of type ${v.goType}`,
  }),
  /** A body's fields, one given with a value breaking a rule: illegal (1009); the details name missing fields too. */
  fieldsInvalid: fieldRefusal('invalidParameter', 'invalid'),
  /** A body's fields whose only fault is `Required` ones left out: incomplete (1008). */
  fieldsMissing: fieldRefusal('missingParameter', 'missing'),

  // ------------------------------------------------------------ query parameters
  indexInvalid: entry({
    kind: 'invalidParameter', message: 'invalid index: must be an unsigned integer', details: () => rule('index', 'Format:must be an unsigned integer'), consulText: 'Invalid index',
  }),
  waitInvalid: entry<DurationRule>({
    kind: 'invalidParameter', message: (v) => `invalid wait: ${v.rule}`, details: (v) => rule('wait', `Format:${v.rule}`), consulText: 'Invalid wait time',
  }),
  maxStaleInvalid: entry<DurationRule & { value: string }>({
    kind: 'invalidParameter', message: (v) => `invalid max_stale: ${v.rule}`, details: (v) => rule('max_stale', `Format:${v.rule}`),
    consulText: (v) => `Invalid max_stale value ${JSON.stringify(v.value)}`,
  }),
  staleWithConsistent: entry({
    kind: 'invalidParameter', message: 'cannot specify ?stale with ?consistent, conflicting semantics', details: () => rule('consistent', 'Conflict:cannot be combined with stale'),
    consulText: 'Cannot specify ?stale with ?consistent, conflicting semantics.',
  }),
  noPathToDatacenter: entry<{ dc: string }>({
    kind: 'remoteUnavailable', message: (v) => `no path to datacenter "${v.dc}"`, details: (v) => ({ dc: v.dc }), consulText: 'No path to datacenter',
    callerFault: true,
  }),
  /** `why`: the evaluator's text, which names the line, column and offset of a syntax error and what was expected there. */
  filterInvalid: entry<{ why: string }>({
    kind: 'invalidParameter', message: (v) => v.why, consulStatus: 500, consulText: (v) => v.why, details: (v) => rule('filter', `Syntax:${v.why}`),
  }),
  listParameterInvalid: entry<{ field: string; rule: string; why: string }>({
    kind: 'invalidParameter', message: (v) => `invalid ${v.field}: ${v.why}`, details: (v) => rule(v.field, `${v.rule}:${v.why}`),
  }),
  passingInvalid: entry<{ value: string }>({
    kind: 'invalidParameter', message: (v) => `invalid value for ?passing: ${JSON.stringify(v.value)}`, details: () => rule('passing', 'Format:must be true or false'),
    consulText: 'Invalid value for ?passing',
  }),
  segmentWithWan: entry({
    kind: 'invalidParameter', message: 'cannot provide a segment with wan=true', details: () => rule('segment', 'Conflict:not with wan'),
    consulText: 'Cannot provide a segment with wan=true',
  }),
  metricsFormatInvalid: entry<{ format: string }>({
    kind: 'invalidParameter', message: (v) => `format must be prometheus or json, not ${JSON.stringify(v.format.slice(0, 64))}`,
    details: () => rule('format', 'Enum:must be prometheus or json'), consulText: 'Invalid format: must be prometheus or json',
  }),

  ...kvErrorCatalogue,
  ...agentErrorCatalogue,
  ...logErrorCatalogue,

  // ------------------------------------------------------------ sessions
  sessionIdMissing: missingInPath('session', 'Missing session', 'session id', 'a session id is required'),
  sessionMissing: missingInPath('session', 'Missing session'),
  sessionNotFound: entry<{ id: string }>({
    kind: 'notFound', message: (v) => `session "${v.id}" not found`, details: (v) => ({ session: v.id }), consulText: (v) => `Session id '${v.id}' not found`,
  }),
  sessionNodeUnknown: entry<{ node: string | undefined }>({
    kind: 'objectNotFound', message: (v) => `node "${v.node}" is not registered`, details: (v) => rule('Node', `Exists:node "${v.node}" is not registered`),
    consulText: 'Missing node registration',
  }),
  sessionCheckUnknown: entry<{ check: string | undefined }>({
    kind: 'objectNotFound', message: (v) => `check '${v.check}' is not registered on the session's node`, details: (v) => rule('checks', `Exists:check '${v.check}' is not registered`),
    consulText: (v) => `Missing check '${v.check}' registration`,
  }),
  sessionCheckCritical: entry<{ check: string | undefined }>({
    kind: 'invalidParameter', message: (v) => `check '${v.check}' is in critical state`, details: (v) => rule('checks', `State:check '${v.check}' is in critical state`),
    consulStatus: 500, consulText: (v) => `Check '${v.check}' is in critical state`,
  }),
  sessionCreateFailed: entry<Reason>({ kind: 'unknown', message: (v) => `session create failed: ${v.reason}` }),

  // ------------------------------------------------------------ agent, catalog, health
  checkIdMissing: missingInPath('checkId', 'Missing check ID'),
  serviceIdMissing: missingInPath('serviceId', 'Missing service ID'),
  serviceMissing: missingInPath('service', 'Missing service name'),
  nodeMissing: missingInPath('node', 'Missing node name'),
  checkStateMissing: missingInPath('state', 'Missing check state'),
  checkNotFound: entry<{ id: string }>({
    kind: 'notFound', message: (v) => `unknown check ID "${v.id}"`, details: (v) => ({ checkId: v.id }),
    consulText: (v) => `Unknown check ID "${v.id}". Ensure that the check ID is passed, not the check name.`,
  }),
  serviceNotFound: entry<{ id: string }>({
    kind: 'notFound', message: (v) => `unknown service ID "${v.id}"`, details: (v) => ({ serviceId: v.id }),
    consulText: (v) => `Unknown service ID "${v.id}". Ensure that the service ID is passed, not the service name.`,
  }),
  maintenanceEnableMissing: entry({
    kind: 'missingParameter', message: 'enable is required: true or false', details: () => rule('enable', 'Required:must be true or false'),
    consulText: 'Missing value for enable',
  }),
  maintenanceEnableInvalid: entry<{ value: string }>({
    kind: 'invalidParameter', message: (v) => `invalid value for enable: ${JSON.stringify(v.value)}`, details: () => rule('enable', 'Format:must be true or false'),
    consulText: (v) => `Invalid value for enable: ${JSON.stringify(v.value)}`,
  }),
  reloadFailed: entry<Reason>({ kind: 'unknown', message: (v) => `reload failed: ${v.reason}`, consulText: (v) => `Failed to reload configs: ${v.reason}` }),
  memberNotFound: entry<{ node: string }>({
    kind: 'notFound', message: (v) => `no member named "${v.node}"`, details: (v) => ({ node: v.node }),
    consulStatus: 500, consulText: (v) => `agent: No node found with name '${v.node}'`,
  }),
  /** A check registered for a service that does not exist. */
  checkServiceNotFound: entry<{ id: string }>({
    kind: 'notFound', message: (v) => `unknown service ID "${v.id}"`, details: (v) => ({ serviceId: v.id }), consulText: (v) => `ServiceID "${v.id}" does not exist`,
  }),
  registrationFailed: entry<Reason>({ kind: 'unknown', message: (v) => `registration failed: ${v.reason}` }),
  checkNotTtl: entry<{ checkId: string; type: string }>({
    kind: 'invalidParameter', message: (v) => `check "${v.checkId}" is not a TTL check`, details: (v) => rule('checkId', `Kind:check is of type ${v.type || 'none'}, not ttl`),
    consulStatus: 500, consulText: (v) => `CheckID "${v.checkId}" does not have associated TTL`,
  }),
  checkStatusInvalid: entry<{ status: unknown }>({
    kind: 'invalidParameter', message: (v) => `invalid check status: ${JSON.stringify(v.status ?? '')}`, details: () => rule('Status', 'Enum:must be passing, warning or critical'),
    consulText: (v) => `Invalid check status: '${typeof v.status === 'string' ? v.status : ''}'`,
  }),
  checkStateUnknown: entry<{ state: string }>({
    kind: 'invalidParameter', message: (v) => `unknown check state "${v.state}"`, details: () => rule('state', 'Enum:must be any, passing, warning, critical or fail'),
  }),
  deregisterNodeMissing: entry({ kind: 'missingParameter', message: 'Node is required', details: () => rule('Node', 'Required:must not be empty'), consulText: 'Missing node name' }),
  nodeNameReserved: entry<{ node: string; id: string; holderId: string; holder: string; address: string }>({
    kind: 'invalidParameter', message: (v) => `node name "${v.node}" belongs to the live node "${v.holder}" (${v.holderId}, ${v.address}); it cannot take another ID`,
    details: (v) => rule('Node', `Unique:node name "${v.node}" belongs to the live node "${v.holder}" (${v.holderId})`),
    consulStatus: 500, consulText: (v) => `Error while renaming Node ID: "${v.id}": Node name ${v.node} is reserved by node ${v.holderId} with name ${v.holder} (${v.address})`,
  }),
  nodeIdHeld: entry<{ id: string; holder: string; address: string }>({
    kind: 'invalidParameter', message: (v) => `node ID ${v.id} belongs to the live node "${v.holder}" (${v.address}); another node cannot take it`,
    details: (v) => rule('ID', `Unique:node ID belongs to the live node "${v.holder}"`),
    consulStatus: 500, consulText: (v) => `Error while renaming Node ID: "${v.id}": node ${v.holder} holding it is alive`,
  }),
  nodeIdTaken: entry<{ id: string; holder: string | undefined }>({
    kind: 'invalidParameter', message: (v) => `node ID ${v.id} was taken by node "${v.holder}" meanwhile; register again`,
    details: (v) => rule('ID', `Unique:node ID is held by node "${v.holder}"`),
    consulStatus: 500, consulText: (v) => `Error while renaming Node ID: "${v.id}": held by node ${v.holder}`,
  }),
  deregisterCheckIdNotString: entry({ kind: 'invalidParameter', message: 'CheckID must be a string', details: () => rule('CheckID', 'Type:must be a string') }),
  deregisterServiceUnsupported: entry({
    kind: 'invalidParameter', message: 'ServiceID: services are deregistered through /v1/agent/service/deregister',
    details: () => rule('ServiceID', 'Unsupported:services are deregistered through the agent service endpoints'),
  }),
  definitionFieldUnknown: entry<{ field: string; what: string }>({
    kind: 'invalidParameter', message: (v) => `unknown field "${v.field}" in the ${v.what}`, details: (v) => rule(v.field, 'Unknown:this field is not part of the definition'),
    consulText: (v) => `Request decode failed: json: unknown field "${v.field}"`,
  }),
  definitionNotObject: entry<{ what: string }>({
    kind: 'illegalJson', message: (v) => `the ${v.what} must be a JSON object`, details: () => rule('body', 'Type:must be a JSON object'),
    consulText: (v) => `Request decode failed: json: cannot unmarshal into Go value of type ${v.what}`,
  }),
  checksNotArray: entry({ kind: 'invalidParameter', message: 'Checks must be an array', details: () => rule('Checks', 'Type:must be an array of checks') }),
  scriptChecksDisabled: entry<{ remote: boolean }>({
    kind: 'insufficientPermission', details: () => rule('Args', 'Permission:script checks are disabled on this agent'), consulStatus: 500,
    message: (v) => (v.remote
      ? "Scripts are disabled on this agent from remote calls; to enable, configure 'enable_script_checks' to true"
      : "Scripts are disabled on this agent; to enable, configure 'enable_script_checks' or 'enable_local_script_checks' to true"),
  }),

  // ------------------------------------------------------------ the dashboard
  uiNotBuilt: entry<{ dir: string }>({
    kind: 'notFound', message: (v) => `the dashboard is not built: run \`npm run build:ui\` (it builds ui/ into ${v.dir})`, details: (v) => ({ dir: v.dir }),
    consulText: 'dashboard not built: run `npm run build:ui`\n',
  }),
  uiNoFile: entry<{ path: string }>({
    kind: 'notFound', message: (v) => `no dashboard file at ${v.path}`, details: (v) => ({ path: v.path }), consulText: (v) => `no dashboard file at ${v.path}\n`,
  }),
  uiPathEscapes: entry({
    kind: 'illegalRequest', message: 'the path leaves the dashboard directory', details: () => rule('path', 'Path:no ".." segments'),
    consulText: 'invalid dashboard path\n',
  }),

  // ------------------------------------------------------------ the stream's upgrade
  streamSubprotocolUnsupported: entry<{ use: string; offered: string[] }>({
    kind: 'invalidParameter', message: (v) => `unsupported subprotocol; use ${v.use}`, details: (v) => ({ offered: v.offered }),
  }),
  streamForbidden: entry<{ resources: readonly string[] }>({
    kind: 'insufficientPermission', message: 'permission denied: the stream needs read on a service, node, session or key prefix',
    details: (v) => ({ resource: v.resources.join('|'), access: 'read' }), consulText: 'Permission denied',
  }),
  streamConnectionsFull: entry<{ max: number }>({
    kind: 'remoteUnavailable', message: (v) => `too many stream connections: at most ${v.max} on this agent`, details: (v) => ({ connectionsMax: v.max, retryAfterSeconds: 1 }),
    status: 503, consulStatus: 503, consulText: 'too many stream connections', headers: () => retryAfter(1),
  }),
  streamClientConnectionsFull: entry<{ max: number }>({
    kind: 'illegalRequest', message: (v) => `too many stream connections: at most ${v.max} per client`, details: (v) => ({ connectionsMax: v.max }),
    status: 429, consulStatus: 429, consulText: 'too many stream connections', headers: () => retryAfter(1),
  }),
  // A plain GET of the stream's path whose token the upgrade would take: the stream is only a WebSocket.
  streamUpgradeRequired: entry<{ version: string }>({
    kind: 'illegalRequest', message: (v) => `the stream is a WebSocket: open it with an upgrade (Upgrade: websocket, Sec-WebSocket-Version: ${v.version})`,
    details: (v) => ({ upgrade: 'websocket', version: v.version }), status: 426, consulStatus: 426,
    consulText: (v) => `the stream is a WebSocket: upgrade with Sec-WebSocket-Version ${v.version}\n`,
    headers: (v) => [['Upgrade', 'websocket'], ['Sec-WebSocket-Version', v.version]],
  }),
  authenticationFailed: entry({ kind: 'unknown', message: 'authentication failed' }),

  // ------------------------------------------------------------ capacity (the log's own refusals: errors-log.ts)
  // No Retry-After: only deletes (or a higher limit) make room, not time.
  stateQuotaExceeded: entry<{ stateBytes: number; stateBytesMax: number }>({
    kind: 'remoteUnavailable', status: 503, consulStatus: 503, consulText: 'state quota exceeded',
    message: (v) => `the registry is full: its state takes about ${v.stateBytes} bytes, at or past limits.state_bytes_max (${v.stateBytesMax}); delete keys, sessions or registrations, or raise the limit`,
    details: (v) => ({ stateBytes: v.stateBytes, stateBytesMax: v.stateBytesMax }),
  }),
  answersBusy: busy('too many large answers are being sent; retry shortly', 'too many large answers in flight'),
  internal: entry<{ why: string }>({ kind: 'unknown', message: (v) => `internal error: ${v.why}` }),
  // A node that does not know a command would stop on it: refused until every node runs a release that applies it.
  clusterBehind: entry<{ what: string; needs: number; behind: { node: string; level: number; status: string }[] }>({
    kind: 'remoteUnavailable', status: 503,
    message: (v) => `${v.what} needs every node of the cluster to run a release of command level ${v.needs} or later; `
      + `${v.behind.map((b) => `${b.node} (${b.status}) runs level ${b.level}`).join(', ')}: finish the rolling upgrade `
      + '(or force-leave a node that is gone for good) and retry',
    details: (v) => ({ needsCommandLevel: v.needs, behind: v.behind, retryAfterSeconds: 5 }), headers: () => retryAfter(5),
    consulText: (v) => `${v.what} is not available until every node is upgraded: ${v.behind.map((b) => b.node).join(', ')} runs an older release`,
  }),
};

export type ErrorName = keyof typeof errorCatalogue;
/** The variables of error `N`'s texts. */
export type ErrorVars<N extends ErrorName> = (typeof errorCatalogue)[N] extends { readonly vars?: [infer V] } ? V : never;
type VarsArgs<N extends ErrorName> = undefined extends ErrorVars<N> ? [vars?: ErrorVars<N>] : [vars: ErrorVars<N>];

/** A named error of the catalogue with both dialects' renderings made from its variables. */
export class RegistryError<N extends ErrorName = ErrorName> extends Error {
  readonly kind: ErrorKind;
  /** The class's public code. */
  readonly code: number;
  /** The seed body's `details` (absent: none). */
  readonly details: Record<string, unknown> | undefined;
  /** The seed status. */
  readonly status: number;
  readonly consulStatus: number;
  readonly consulText: string;
  /** Response headers the error needs in both dialects (Retry-After on a 429 or 503, Allow on a 405). */
  readonly headers: [string, string][];
  /** Response headers of the seed dialect only (WWW-Authenticate on a 401). */
  readonly seedHeaders: [string, string][];
  /** The request alone caused it (a 4xx in the seed dialect, or an entry marked so): not the agent's trouble. */
  readonly callerFault: boolean;

  constructor(readonly error: N, ...args: VarsArgs<N>) {
    const e = errorCatalogue[error] as ErrorEntry<ErrorVars<N>>;
    const v = args[0] as ErrorVars<N>;
    const message = text(e.message, v)!;
    super(message);
    this.name = 'RegistryError';
    this.kind = e.kind;
    this.code = errorKinds[e.kind].code;
    this.details = e.details?.(v);
    this.status = e.status ?? errorKinds[e.kind].status;
    this.consulStatus = (typeof e.consulStatus === 'function' ? e.consulStatus(v) : e.consulStatus) ?? errorKinds[e.kind].consulStatus;
    this.consulText = text(e.consulText, v) ?? message;
    this.headers = e.headers?.(v) ?? [];
    this.seedHeaders = e.seedHeaders?.(v) ?? [];
    this.callerFault = this.status < 500 || e.callerFault === true;
  }
}
