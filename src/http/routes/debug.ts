/**
 * Profiles of the running agent, the counterpart of Consul's `/debug/pprof/*` for a Node.js process:
 * `GET /v1/agent/debug/cpu-profile?seconds=N` answers a V8 CPU profile (`.cpuprofile`) taken over the next N
 * seconds, `GET /v1/agent/debug/heap-profile?seconds=N` a sampling heap profile (`.heapprofile`); N is 1 to
 * `profileSecondsMax`, 10 by default. As in Consul, they need operator read with authentication on, and
 * `enable_debug` in the config file without it. One profile of each kind at a time; a client that goes
 * away ends its profile. `GET /v1/agent/host` (Consul's endpoint, operator read) answers the machine and
 * process the agent runs on.
 */
import { RegistryError } from '../../domain/errors.ts';
import type { ApiContext } from '../api.ts';
import { json, type Reply } from '../reply.ts';
import { param, type Request } from '../request.ts';
import type { Route } from '../router.ts';

/** The longest profile: five minutes, as Consul's `consul debug` captures by default. */
export const profileSecondsMax = 300;
const profileSecondsDefault = 10;

function secondsOf(req: Request): number {
  const text = param(req, 'seconds');
  if (text === undefined || text === '') return profileSecondsDefault;
  const n = /^\d{1,3}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= profileSecondsMax)) throw new RegistryError('profileSecondsInvalid', { text, max: profileSecondsMax });
  return n;
}

function profile(kind: 'cpu' | 'heap') {
  return async (req: Request, api: ApiContext): Promise<Reply> => {
    const profiler = api.profiler;
    if (profiler === undefined) throw new RegistryError('noEndpoint', { method: req.method, path: req.path });
    // With authentication on, the gate has checked operator read; without it, enable_debug decides.
    if (req.identity === undefined && !profiler.enabled) throw new RegistryError('debugDisabled');
    const seconds = secondsOf(req);
    if (profiler.busy(kind)) throw new RegistryError('profileBusy', { kind: kind === 'cpu' ? 'CPU' : 'heap' });
    const taken = await profiler.take(kind, seconds * 1000, req.signal);
    // Taken undefined only when the client went away: nobody reads this answer.
    return json(taken ?? null);
  };
}

async function host(req: Request, api: ApiContext): Promise<Reply> {
  if (api.host === undefined) throw new RegistryError('noEndpoint', { method: req.method, path: req.path });
  return json(await api.host());
}

export const debugRoutes: Route<ApiContext>[] = [
  { path: '/v1/agent/host', prefix: false, methods: { GET: host } },
  { path: '/v1/agent/debug/cpu-profile', prefix: false, methods: { GET: profile('cpu') }, query: ['seconds'] },
  { path: '/v1/agent/debug/heap-profile', prefix: false, methods: { GET: profile('heap') }, query: ['seconds'] },
];
