/**
 * Agent errors in the error catalogue (errors.ts spreads it in): following the agent's log
 * (`/v1/agent/monitor`), profiling it (`/v1/agent/debug/*`), what its checks' owners allow, and a write
 * its log gave up on without knowing whether it was stored, the stream refused to a page of another origin,
 * the lookups of one of the agent's services (`/v1/agent/service/<id>`, `/v1/agent/health/service/*`), and the
 * agent caching options of the reads (`?cached`, the Cache-Control header).
 */
import { entry, missingInPath, rule } from './error-kinds.ts';

const retryAfter = (seconds: number): [string, string][] => [['Retry-After', String(seconds)]];

export const agentErrorCatalogue = {
  monitorLevelInvalid: entry<{ level: string }>({
    kind: 'invalidParameter', message: (v) => `loglevel must be trace, debug, info, warn or error, not ${JSON.stringify(v.level.slice(0, 64))}`,
    details: () => rule('loglevel', 'Enum:must be trace, debug, info, warn or error'), consulText: (v) => `Unknown log level: ${v.level.slice(0, 64)}`,
  }),
  monitorsFull: entry<{ max: number }>({
    kind: 'remoteUnavailable', message: (v) => `too many monitors: at most ${v.max} on this agent`, details: (v) => ({ monitorsMax: v.max, retryAfterSeconds: 1 }),
    status: 503, consulStatus: 503, consulText: 'too many monitors', headers: () => retryAfter(1),
  }),
  debugDisabled: entry({
    kind: 'insufficientPermission',
    message: 'profiling is off: set enable_debug to true in the config file, or turn authentication on and use a token with operator read',
    details: () => ({ setting: 'enable_debug' }), consulText: 'Permission denied: enable_debug is off',
  }),
  profileSecondsInvalid: entry<{ text: string; max: number }>({
    kind: 'invalidParameter', message: (v) => `seconds must be a whole number from 1 to ${v.max}, not ${JSON.stringify(v.text.slice(0, 64))}`,
    details: (v) => rule('seconds', `Range:must be a whole number from 1 to ${v.max}`), consulText: (v) => `Invalid seconds: must be a whole number from 1 to ${v.max}`,
  }),
  profileBusy: entry<{ kind: string }>({
    kind: 'remoteUnavailable', message: (v) => `a ${v.kind} profile of this agent is being taken; retry once it is done`,
    details: () => ({ retryAfterSeconds: 5 }), status: 503, consulStatus: 503, consulText: 'profile in progress', headers: () => retryAfter(5),
  }),
  // No Retry-After: the write may still take effect, so a blind retry could apply it twice; read it back first.
  writeOutcomeUnknown: entry({
    kind: 'remoteUnavailable', status: 503, consulStatus: 500,
    message: 'the write was not confirmed: the log could not be reached to store it and it may still take effect; read it back before retrying',
    details: () => ({ outcome: 'unknown' }), consulText: 'rpc error: the write may or may not have been applied',
  }),
  entryTooLarge: entry<{ bytes: number; max: number }>({
    kind: 'inputTooLong', message: (v) => `the write takes ${v.bytes} bytes in the log, above the ${v.max} bytes one log entry holds`
      + ' (in a cluster, the nats-servers\' max_payload)',
    details: (v) => ({ size: v.bytes, max: v.max }), consulText: (v) => `Request body(${v.bytes} bytes) too large, max size: ${v.max} bytes`,
  }),
  streamOriginRefused: entry<{ origin: string }>({
    kind: 'insufficientPermission',
    message: (v) => `the stream is not opened for a web page of another origin (${v.origin.slice(0, 200)}) while authentication is off: `
      + 'any site would read the registry through its visitors\' browsers; open it from the agent\'s own address, or turn authentication on and send a token',
    details: (v) => ({ origin: v.origin.slice(0, 200) }), consulText: 'Permission denied: cross-origin stream',
  }),
  checkIdReserved: entry<{ checkId: string }>({
    kind: 'invalidParameter', message: (v) => `check ID ${JSON.stringify(v.checkId)} is the agent's own node check; give the check another ID`,
    details: () => rule('CheckID', 'Reserved:gossipHealth and serfHealth are the agent\'s'), consulText: (v) => `Check ID "${v.checkId}" is reserved`,
  }),
  checkOwnerDenied: entry<{ checkId: string }>({
    kind: 'insufficientPermission', message: (v) => `permission denied: check ${JSON.stringify(v.checkId)} belongs to a service this token may not write`,
    details: (v) => ({ resource: 'service', checkId: v.checkId, access: 'write' }), consulText: 'Permission denied',
  }),
  serviceIdDenied: entry<{ id: string }>({
    kind: 'insufficientPermission', message: (v) => `permission denied: service ID ${JSON.stringify(v.id)} belongs to an instance of a service this token may not write`,
    details: (v) => ({ resource: 'service', serviceId: v.id, access: 'write' }), consulText: 'Permission denied',
  }),
  nodeServiceDenied: entry<{ node: string }>({
    kind: 'insufficientPermission', message: (v) => `permission denied: node ${JSON.stringify(v.node)} holds a service this token may not write`,
    details: (v) => ({ resource: 'service', node: v.node, access: 'write' }), consulText: 'Permission denied',
  }),
  aliasServiceDenied: entry<{ serviceId: string; node: string }>({
    kind: 'insufficientPermission',
    message: (v) => `permission denied: an alias check of service ID ${JSON.stringify(v.serviceId)} on node ${JSON.stringify(v.node)} needs read on its service`,
    details: (v) => ({ resource: 'service', serviceId: v.serviceId, node: v.node, access: 'read' }), consulText: 'Permission denied',
  }),
  agentServiceUnknown: entry<{ id: string }>({
    kind: 'notFound', message: (v) => `unknown service ID "${v.id}"`, details: (v) => ({ serviceId: v.id }), consulText: (v) => `unknown service ID: ${v.id}`,
  }),
  agentHealthIdMissing: missingInPath('serviceId', 'Missing serviceID'),
  agentHealthNameMissing: missingInPath('service', 'Missing service Name'),
  agentHealthIdUnknown: entry<{ id: string }>({
    kind: 'notFound', message: (v) => `unknown service ID "${v.id}"`, details: (v) => ({ serviceId: v.id }), consulText: (v) => `ServiceId ${v.id} not found`,
  }),
  agentHealthNameUnknown: entry<{ name: string }>({
    kind: 'notFound', message: (v) => `no service named "${v.name}" on this agent`, details: (v) => ({ service: v.name }),
    consulText: (v) => `ServiceName ${v.name} Not Found`,
  }),
  // Agent caching (`?cached`): the query option Consul refuses beside ?consistent, and the Cache-Control it reads.
  cachedWithConsistent: entry({
    kind: 'invalidParameter', message: 'cannot specify ?cached with ?consistent, conflicting semantics',
    details: () => rule('cached', 'Conflict:cannot be combined with consistent'), consulText: 'Cannot specify ?cached with ?consistent, conflicting semantics.',
  }),
  cacheControlInvalid: entry<{ directive: 'max-age' | 'stale-if-error' }>({
    kind: 'invalidParameter', message: (v) => `invalid Cache-Control header: ${v.directive} must be a whole number of seconds`,
    details: (v) => rule('Cache-Control', `Format:${v.directive} must be a whole number of seconds`), consulText: 'Invalid Cache-Control header.',
  }),
};
