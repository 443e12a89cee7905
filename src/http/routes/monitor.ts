/**
 * `GET /v1/agent/monitor`: the agent's log as it is written, as Consul's agent serves it to `consul monitor`.
 * `?loglevel=` (trace, debug, info, warn, error; any case; default info) picks the lines, whatever level
 * the agent logs at; `?logjson` sends them as the agent's JSON lines instead of text. The answer stays open
 * until the client goes away, the agent stops, or the caller's token expires. A client that reads too
 * slowly loses lines, not the agent's memory: the next line it gets after the loss says how many.
 * At most `monitorsMax` monitors are open on an agent at once (each makes the agent log at its level).
 */
import { RegistryError } from '../../domain/errors.ts';
import { monitorLevels, type ApiContext, type LogSource, type MonitorLevel } from '../api.ts';
import type { Feed, FeedOut, Reply } from '../reply.ts';
import { flag, param, type Request } from '../request.ts';
import type { Route } from '../router.ts';
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
  return { t: 'feed', contentType: json ? 'application/x-ndjson' : 'text/plain; charset=utf-8', feed: logFeed(logs, level, json, announce, req.identity?.expiresAtMs) };
}

function logFeed(logs: LogSource, level: MonitorLevel, json: boolean, announce: { msg: string; fields: Record<string, unknown> }, expiresAtMs: number | undefined): Feed {
  return {
    start(out: FeedOut) {
      let dropped = 0;
      const deliver = (line: string) => {
        if (dropped > 0 && out.write(droppedLine(dropped, json))) dropped = 0;
        if (dropped > 0 || !out.write(line)) dropped += 1;
      };
      const unfollow = logs.follow(level, json, deliver, announce);
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
  { path: '/v1/agent/monitor', prefix: false, methods: { GET: monitor }, query: ['loglevel', 'logjson'] },
];
