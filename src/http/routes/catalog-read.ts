/**
 * What the catalog and health reads share: the path's trailing parameter, what of the catalog the caller
 * may read, and the blocking read every one of them is.
 */
import { RegistryError } from '../../domain/errors.ts';
import type { HealthCheck } from '../../domain/types.ts';
import type { Schema } from '../../filter/index.ts';
import type { RegistryState } from '../../state/index.ts';
import { everyItem, filterOf, noItem, type ListFilter } from '../filtering.ts';
import type { ApiContext } from '../api.ts';
import { awaitQuery, parseQueryOptions } from '../query.ts';
import { json, type Reply } from '../reply.ts';
import { readableUnder, type Request } from '../request.ts';
import type { Interest } from '../../runtime/index.ts';
import { consulServiceName } from './consul-service.ts';

/** The path's trailing parameter, or the error naming what is missing. */
export function required(req: Request, missing: 'checkIdMissing' | 'serviceIdMissing' | 'serviceMissing' | 'nodeMissing' | 'checkStateMissing'): string {
  if (req.rest === '') throw new RegistryError(missing);
  return req.rest;
}

export const everything = (_name: string) => true;

/**
 * What of the catalog the caller may read, as Consul filters its lists: nodes by node read, service
 * instances by service read on their name (everything without authentication, or with a token that may
 * read every name). The route's own rule is checked first, by the gate.
 */
export function catalogAcl(req: Request): { node: (name: string) => boolean; service: (name: string) => boolean } {
  return { node: readableUnder(req, 'node', '') ?? everything, service: readableUnder(req, 'service', '') ?? everything };
}

/** A check is shown when its node may be read, and for a service check its service too (Consul's rule). */
export function checkVisible(acl: ReturnType<typeof catalogAcl>, c: HealthCheck): boolean {
  return acl.node(c.node) && (c.serviceId === '' || acl.service(c.serviceName));
}

/** What a read reports as X-Consul-Index and, blocking, waits on. */
export interface Watched {
  index(): number;
  interest: Interest;
}

/** The catalog's index: any change of a node, service or check. */
export function catalogWatched(_req: Request, api: ApiContext): Watched {
  return { index: () => api.runtime.state.catalogIndex, interest: { kind: 'catalog' } };
}

/**
 * The index of the service named by the path (RegistryState.serviceIndex), as Consul's reads of one service
 * have it: a change of another service neither moves it nor wakes the read. A name without instances has
 * the catalog's index and waits on any catalog change (one of them may register it); so does the consul
 * dialect's `consul` service, whose instances are the nodes running Roster (consul-service.ts).
 */
export function serviceWatched(req: Request, api: ApiContext): Watched {
  const name = req.rest;
  const state = () => api.runtime.state;
  if ((api.dialect === 'consul' && name === consulServiceName) || !state().serviceIndexes.has(name)) return catalogWatched(req, api);
  return { index: () => state().serviceIndex(name), interest: { kind: 'service', name } };
}

/**
 * A catalog read: query options, filter compiled first, wait on its index (the catalog's by default), then
 * render. `read` takes what it lists from the state at once and may then filter it over several turns of
 * the event loop (filtering.ts): the index answered is the one the state had when it was taken.
 */
export function catalogRead(schema: Schema | undefined, read: (req: Request, api: ApiContext, filter: ListFilter) => unknown,
  watched: (req: Request, api: ApiContext) => Watched = catalogWatched) {
  return async (req: Request, api: ApiContext): Promise<Reply> => {
    const q = parseQueryOptions(req, api);
    const filter = schema ? filterOf(req, schema) : everyItem;
    const answer = async () => {
      const index = watched(req, api).index();
      return json(await read(req, api, filter), { index, consistency: q.consistency });
    };
    if (q.minIndex === 0 && !q.consistent) return answer();
    // Read once before waiting only to validate the path: the filter is not tried on what it lists.
    await read(req, api, noItem);
    // Chosen as the read waits: whether the service has instances decides what it waits on.
    const w = watched(req, api);
    await awaitQuery(req, api, q, w.interest, () => w.index());
    return answer();
  };
}

/**
 * `?node-meta=key:value`, repeatable, every pair must match the node's meta (Consul's node-meta filter). A
 * value is split at its first colon; one without a colon asks for the key with an empty value, and a key given
 * twice keeps its last value, as Consul parses it (it refuses no form of the parameter). Without the parameter
 * every node matches. Consul lists the nodes, services, service nodes, health entries and checks of the
 * matching nodes only.
 */
export function nodeMetaFilter(req: Request, state: RegistryState): (node: string) => boolean {
  const values = req.query.getAll('node-meta');
  if (values.length === 0) return () => true;
  const wanted = new Map<string, string>();
  for (const v of values) {
    const colon = v.indexOf(':');
    if (colon < 0) wanted.set(v, '');
    else wanted.set(v.slice(0, colon), v.slice(colon + 1));
  }
  return (node) => {
    const meta = state.nodes.get(node)?.meta;
    return meta !== undefined && [...wanted].every(([k, v]) => Object.hasOwn(meta, k) && meta[k] === v);
  };
}
