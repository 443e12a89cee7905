/**
 * `GET /v1/agent/monitor`: the agent's log as it is written, as Consul's agent serves it to `consul monitor`.
 * `?loglevel=` (trace, debug, info, warn, error; any case; default info) picks the lines, whatever level
 * the agent logs at; `?logjson` sends them as the agent's JSON lines instead of text. The answer stays open
 * until the client goes away, the agent stops, or the caller's token expires. A client that reads too
 * slowly loses lines, not the agent's memory: the next line it gets after the loss says how many.
 * At most `monitorsMax` monitors are open on an agent at once (each makes the agent log at its level).
 *
 * The route needs agent read, as Consul's; beyond Consul, a monitor shows no name its token may not read.
 * A request line's path is shown whole only when the token may read what it names (acl.ts
 * mayReadPathName; a path the log cut short is not shown); otherwise only the route's fixed part, the rest
 * `<hidden>` (`/v1/kv/<hidden>`). A
 * session id in another line is shown only to a token that may read every session. A token that may read
 * every name (key, session, node, service and check, and operator write for paths no rule names) sees the
 * lines as they are, and so does every monitor while authentication is off.
 */
import { allowed, allowedPrefix, mayReadPathName, type Identity } from '../../auth/index.ts';
import { RegistryError } from '../../domain/errors.ts';
import { monitorLevels, type ApiContext, type LogRedaction, type LogSource, type MonitorLevel } from '../api.ts';
import type { Feed, FeedOut, Reply } from '../reply.ts';
import { flag, param, type Request } from '../request.ts';
import { unmatchedPattern, type Route } from '../router.ts';
import { setLongTimeout, type LongTimer } from '../../util/timer.ts';

/** Monitors open on one agent at once. */
export const monitorsMax = 64;

function levelOf(req: Request): MonitorLevel {
  const asked = param(req, 'loglevel');
  if (asked === undefined || asked === '') return 'info';
  const level = asked.toLowerCase() === 'warning' ? 'warn' : asked.toLowerCase();
  if (!(monitorLevels as readonly string[]).includes(level)) throw new RegistryError('monitorLevelInvalid', { level: asked });
  return level as MonitorLevel;
}

/** Consul's `logjson` is a flag that may also carry `true` or `false`. */
function jsonOf(req: Request): boolean {
  if (!flag(req, 'logjson')) return false;
  return param(req, 'logjson') !== 'false';
}

function monitor(req: Request, api: ApiContext): Reply {
  const logs = api.logs;
  if (logs === undefined) throw new RegistryError('noEndpoint', { method: req.method, path: req.path });
  const level = levelOf(req);
  const json = jsonOf(req);
  if (logs.followed >= monitorsMax) throw new RegistryError('monitorsFull', { max: monitorsMax });
  const announce = { msg: 'monitor started', fields: { reqId: req.id, loglevel: level, ...(req.identity ? { subject: req.identity.subject } : {}) } };
  const redact = req.identity === undefined ? undefined : redactionFor(req.identity);
  return { t: 'feed', contentType: json ? 'application/x-ndjson' : 'text/plain; charset=utf-8', feed: logFeed(logs, level, json, announce, req.identity?.expiresAtMs, redact) };
}

/** The resources whose names the agent's log lines may carry. */
const namedResources = ['key', 'session', 'node', 'service', 'check'] as const;
/** What a hidden part of a line is shown as. */
const hidden = '<hidden>';

/** What `identity` may not see of a log line; undefined when it may read every name the log can carry. */
export function redactionFor(identity: Identity): LogRedaction | undefined {
  const readsAll = (resource: (typeof namedResources)[number]) => allowedPrefix(identity, { resource, name: '', access: 'read' });
  if (namedResources.every(readsAll) && allowed(identity, { resource: 'operator', name: '', access: 'write' })) return undefined;
  const sessionsReadable = readsAll('session');
  return (entry) => {
    let changed = false;
    // A path cut short in the log (`pathChars`) names less than was asked for: which name it was is unknown here.
    const cut = entry.pathChars !== undefined;
    if (entry.msg === 'request' && typeof entry.path === 'string' && (cut || !mayReadPathName(identity, entry.path))) {
      entry.path = hiddenPath(typeof entry.route === 'string' ? entry.route : unmatchedPattern);
      changed = true;
    }
    if (typeof entry.session === 'string' && !sessionsReadable) {
      entry.session = hidden;
      changed = true;
    }
    return changed;
  };
}

/** A request path with its name hidden: the route's fixed part (`/v1/kv/` of `/v1/kv/*`), then `<hidden>`. */
function hiddenPath(route: string): string {
  if (route.endsWith('*')) return `${route.slice(0, -1)}${hidden}`;
  // An exact route's path is the route itself (a trailing slash aside); a path no route serves is the client's own text.
  return route === unmatchedPattern ? hidden : route;
}

function logFeed(logs: LogSource, level: MonitorLevel, json: boolean, announce: { msg: string; fields: Record<string, unknown> }, expiresAtMs: number | undefined,
  redact: LogRedaction | undefined): Feed {
  return {
    start(out: FeedOut) {
      let dropped = 0;
      const deliver = (line: string) => {
        if (dropped > 0 && out.write(droppedLine(dropped, json))) dropped = 0;
        if (dropped > 0 || !out.write(line)) dropped += 1;
      };
      const unfollow = logs.follow(level, json, deliver, announce, redact);
      // The credentials the monitor was opened with stop being valid: so does the monitor.
      const expiry: LongTimer | undefined = expiresAtMs === undefined ? undefined : setLongTimeout(() => out.end(), expiresAtMs - Date.now());
      return () => {
        expiry?.clear();
        unfollow();
      };
    },
  };
}

/** The line that tells a slow client how many lines it lost, in the form of the others. */
function droppedLine(dropped: number, json: boolean): string {
  const msg = `monitor: ${dropped} log lines dropped: the client read too slowly`;
  if (json) return `${JSON.stringify({ level: 40, time: Date.now(), msg, dropped })}\n`;
  return `${new Date().toISOString()} [WARN]  ${msg}\n`;
}

export const monitorRoutes: Route<ApiContext>[] = [
  { path: '/v1/agent/monitor', prefix: false, methods: { GET: monitor }, query: ['loglevel', 'logjson'], produces: { GET: ['text/plain; charset=utf-8', 'application/x-ndjson'] } },
];
