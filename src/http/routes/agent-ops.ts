/**
 * The agent's maintenance operations, as Consul's agent has them: `PUT /v1/agent/reload` reads the config
 * file again (src/agent/reload.ts), `PUT /v1/agent/leave` leaves the cluster gracefully and stops the agent,
 * `PUT /v1/agent/force-leave/<node>` moves a failed member to left (`?prune`: forgets it). Each answers 200
 * with an empty body; they need `agent` write. In the seed dialect a reload that left changed settings for a
 * restart, and a force-leave of a live member (which touches nothing), say so in X-Roster-Warning.
 */
import { ConfigError } from '../../config.ts';
import { RegistryError } from '../../domain/errors.ts';
import type { AgentOperations, ApiContext } from '../api.ts';
import type { Reply } from '../reply.ts';
import { flag, type Request } from '../request.ts';
import { noBody } from '../negotiation.ts';
import type { Route } from '../router.ts';

function operations(api: ApiContext): AgentOperations {
  if (api.operations === undefined) throw new Error('this agent does not offer reload, leave or force-leave');
  return api.operations;
}

async function reload(_req: Request, api: ApiContext): Promise<Reply> {
  let restartNeeded: string[];
  try {
    ({ restartNeeded } = await operations(api).reload());
  } catch (err) {
    if (err instanceof ConfigError) throw new RegistryError('reloadFailed', { reason: err.message });
    throw err;
  }
  if (restartNeeded.length === 0) return { t: 'empty' };
  return { t: 'empty', warning: `changed settings that take effect only at the next restart: ${restartNeeded.join(', ')}` };
}

function leave(_req: Request, api: ApiContext): Reply {
  operations(api).leave();
  return { t: 'empty' };
}

async function forceLeave(req: Request, api: ApiContext): Promise<Reply> {
  const node = req.rest;
  const outcome = await operations(api).forceLeave(node, flag(req, 'prune'));
  if (outcome === 'unknown') throw new RegistryError('memberNotFound', { node });
  return outcome === 'alive' ? { t: 'empty', warning: `${node} is alive: a live member is not forced to leave; nothing changed` } : { t: 'empty' };
}

export const agentOpsRoutes: Route<ApiContext>[] = [
  { path: '/v1/agent/reload', prefix: false, methods: { PUT: reload }, produces: { PUT: noBody } },
  { path: '/v1/agent/leave', prefix: false, methods: { PUT: leave }, produces: { PUT: noBody } },
  { path: '/v1/agent/force-leave/', prefix: true, methods: { PUT: forceLeave }, query: ['prune', 'wan'], produces: { PUT: noBody } },
];
