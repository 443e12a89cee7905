/**
 * The conventions' list parameters (page/perPage, start/limit, sort, fields, field equality, q, count,
 * pretty) applied to any list answer, after its route has answered. Without them a list stays a plain
 * array, as Consul clients expect. The parameters some route reads are never list parameters: the
 * routes declare them (Route.query), and with the credentials' parameters they are the reserved names.
 */
import { RegistryError } from '../domain/errors.ts';
import { credentialParameters } from './auth-gate.ts';
import { applyListQuery, ListQueryError, parseListQuery } from './lists.ts';
import type { Reply } from './reply.ts';
import type { Request } from './request.ts';
import type { Router } from './router.ts';

/** Query parameters the list rules leave alone: every route's own, and the credentials'. */
export function reservedParameters<Ctx>(router: Router<Ctx>): string[] {
  return [...new Set([...router.queryParameters(), ...credentialParameters])];
}

/** An empty list has no fields to check names against: every name the request mentions is taken as known. */
function namesMentioned(query: URLSearchParams): string[] {
  const names = new Set<string>();
  for (const [k, v] of query) {
    if (k === 'sort' || k === 'fields') for (const f of v.split(',')) names.add(f.trim().replace(/^-/, ''));
    else if (k === 'q') for (const term of v.split(' ')) names.add(term.replace(/^-/, '').split(':')[0] ?? '');
    else names.add(k);
  }
  return [...names].filter((n) => n !== '');
}

/**
 * The reply with the list rules applied, and the headers they add (Total-Count). A list may come rendered
 * in advance as well (`json`, with its `tag`: `?keys`): untouched it is sent as it was rendered; changed by
 * the rules (paged, sorted, pretty) it is rendered again from its value.
 */
export function withListRules(req: Request, reply: Reply, reserved: readonly string[]): { reply: Reply; headers: [string, string][] } {
  if (reply.t !== 'json' || reply.value === undefined) return { reply, headers: [] };
  const pretty = req.query.has('pretty') && !['false', '0'].includes(req.query.get('pretty') ?? '');
  if (!Array.isArray(reply.value)) return { reply: pretty ? { ...unrendered(reply), pretty } : reply, headers: [] };
  // Most lists come without list parameters: do not look at their records at all then.
  if ([...req.query.keys()].every((k) => reserved.includes(k))) return { reply, headers: [] };
  const records = reply.value as Record<string, unknown>[];
  const known = records.length > 0
    ? [...new Set(records.flatMap((r) => (r !== null && typeof r === 'object' ? Object.keys(r) : [])))]
    : namesMentioned(req.query);
  let query;
  try {
    query = parseListQuery(req.query, known, [...reserved]);
  } catch (err) {
    if (err instanceof ListQueryError) throw new RegistryError('listParameterInvalid', { field: err.field, rule: err.rule, why: err.message });
    throw err;
  }
  if (query === undefined) return { reply, headers: [] };
  const applied = applyListQuery(records, query);
  return { reply: { ...unrendered(reply), value: applied.body, pretty: query.pretty }, headers: applied.headers };
}

/** The JSON reply without the rendering it came with, for a value the rules changed. */
function unrendered(reply: Extract<Reply, { t: 'json' }>): Extract<Reply, { t: 'json' }> {
  if (reply.json === undefined) return reply;
  const { json, tag, ...rest } = reply;
  return rest;
}
