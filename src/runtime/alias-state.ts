/**
 * What an alias check mirrors (consul-compat.md §4 Alias), computed from the registry state: the check owner
 * proposes it after every catalog change.
 */
import type { CheckStatus, HealthCheck } from '../domain/types.ts';
import type { RegistryState } from '../state/index.ts';
import { headBytes, outputBytesOf } from './check-output.ts';

interface Watched { name: string; status: CheckStatus; output: string }

/**
 * Consul's alias semantics and outputs (consul-compat.md §4 Alias), computed from the checks that are not
 * aliases. An alias check among those watched stands for what it watches in turn, followed through any
 * number of aliases (each watched once), rather than for its own last status and output: so no alias
 * depends on another's last update, aliases of each other cannot keep one another critical or keep
 * updating each other, and an output names the check that failed, not a chain of aliases. The output is
 * kept to the check's output size (its first bytes).
 */
export function aliasState(state: RegistryState, check: HealthCheck, selfNode: string): { status: CheckStatus; output: string } {
  const node = check.definition.aliasNode || selfNode;
  const serviceId = check.definition.aliasService ?? '';
  if (serviceId !== '' && !state.services.has(state.serviceKey(node, serviceId))) {
    return { status: 'critical', output: missingService(serviceId, node) };
  }
  const watched = aliasClosure(state, check, node);
  if (watched.length === 0) return { status: 'passing', output: 'No checks found.' };
  const worst = watched.find((c) => c.status === 'critical') ?? watched.find((c) => c.status === 'warning');
  if (worst === undefined) return { status: 'passing', output: 'All checks passing.' };
  return { status: worst.status, output: headBytes(`Aliased check "${worst.name}" failing: ${worst.output}`, outputBytesOf(check)) };
}

const missingService = (serviceId: string, node: string) => `Service ${serviceId} could not be found on node ${node}`;

/** The checks that are not aliases which `check` watches, directly first, then through the aliases it watches. */
function aliasClosure(state: RegistryState, check: HealthCheck, node: string): Watched[] {
  const found: Watched[] = [];
  const seen = new Set([state.checkKey(check.node, check.checkId)]);
  const queue: Array<{ alias: HealthCheck; node: string }> = [{ alias: check, node }];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    const serviceId = next.alias.definition.aliasService ?? '';
    if (next.alias !== check && serviceId !== '' && !state.services.has(state.serviceKey(next.node, serviceId))) {
      found.push({ name: next.alias.name, status: 'critical', output: missingService(serviceId, next.node) });
      continue;
    }
    for (const c of state.checksOfNode(next.node)) {
      const key = state.checkKey(c.node, c.checkId);
      if ((c.serviceId !== '' && c.serviceId !== serviceId) || seen.has(key)) continue;
      seen.add(key);
      if (c.type === 'alias') queue.push({ alias: c, node: c.definition.aliasNode || c.node });
      else found.push(c);
    }
  }
  return found;
}
