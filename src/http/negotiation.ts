/**
 * Content negotiation of the seed dialect (http-conventions "Status meanings": 406 when the requested format
 * is unsupported; RFC 9110 §12.5.1). A request whose Accept allows none of the media types its route answers
 * with is refused 406 before its handler runs, so a refused write changes nothing; an answer whose own type
 * the Accept refuses (JSON where the client asked for the Prometheus text only) is refused 406 in its place.
 * No Accept, an empty one and `*\/*` accept everything and are not parsed; `application/*`, `q` weights
 * (`;q=0` refuses) and media type parameters are read by `negotiator`. Error answers are JSON whatever the
 * Accept, the 406 itself included, whose Content-Type states the format offered. The consul dialect ignores
 * Accept, as Consul does.
 */
import Negotiator from 'negotiator';
import { RegistryError } from '../domain/errors.ts';
import { renderError, type Wire } from './render.ts';
import type { Reply } from './reply.ts';
import type { Request } from './request.ts';

/**
 * The media type of every JSON answer, as negotiated: JSON is UTF-8 (RFC 8259), so an Accept of
 * `application/json;charset=utf-8` takes it too (the header sent stays Consul's bare `application/json`).
 */
export const jsonMediaType = 'application/json; charset=utf-8';
/** What a route's method answers with when its route names nothing else (router.ts Route.produces). */
export const jsonOnly: readonly string[] = [jsonMediaType];
/** A method whose answers carry no body (`PUT /v1/agent/check/pass/<id>`), or whose type only its answer tells: nothing to judge before it. */
export const noBody: readonly string[] = [];
/** The Prometheus text format of `/v1/agent/metrics?format=prometheus` (prom-client's registry's content type). */
export const prometheusText = 'text/plain; version=0.0.4; charset=utf-8';

/** The request's Accept when it limits anything: undefined for none, an empty one and `*\/*`. */
function limitingAccept(headers: ReadonlyMap<string, string>): string | undefined {
  const accept = headers.get('accept')?.trim();
  return accept === undefined || accept === '' || accept === '*/*' ? undefined : accept;
}

function acceptsSome(accept: string, types: readonly string[]): boolean {
  return new Negotiator({ headers: { accept } }).mediaTypes([...types]).length > 0;
}

/**
 * Refuses (406) a request whose Accept allows none of `types`, the media types its method answers with;
 * `[]` (an answer without a body) is never refused.
 */
export function refuseUnacceptable(req: Request, types: readonly string[]): void {
  const accept = limitingAccept(req.headers);
  if (accept === undefined || acceptable(accept, types)) return;
  throw new RegistryError('notAcceptable', { accept, offered: [...types] });
}

/** Whether a request with these headers is served by a method answering with `types`, as far as its Accept goes (refuseUnacceptable). */
export function acceptedBy(headers: ReadonlyMap<string, string>, types: readonly string[]): boolean {
  const accept = limitingAccept(headers);
  return accept === undefined || acceptable(accept, types);
}

/** `[]` (an answer without a body) is never refused. */
function acceptable(accept: string, types: readonly string[]): boolean {
  return types.length === 0 || acceptsSome(accept, types);
}

/** The media type of the body a reply is sent with; undefined for one without a body, or an error's. */
function answerType(reply: Reply): string | undefined {
  switch (reply.t) {
    case 'json':
      return jsonMediaType;
    case 'outcome':
      return reply.ok ? jsonMediaType : undefined;
    case 'raw':
      return 'text/plain';
    case 'text':
    case 'file':
    case 'feed':
      return reply.contentType;
    default:
      return undefined;
  }
}

/**
 * The 406 answer in place of a reply whose media type the request's Accept refuses, else undefined; it
 * keeps the bytes the reply took from the budget of large answers, for the exchange to give back.
 */
export function refusedAnswer(req: Request, reply: Reply): Wire | undefined {
  const accept = limitingAccept(req.headers);
  const type = accept === undefined ? undefined : answerType(reply);
  if (accept === undefined || type === undefined || acceptsSome(accept, [type])) return undefined;
  const w = renderError(new RegistryError('notAcceptable', { accept, offered: [type] }), 'seed');
  if (reply.t === 'json' && reply.reservedBytes !== undefined) w.reservedBytes = reply.reservedBytes;
  return w;
}
