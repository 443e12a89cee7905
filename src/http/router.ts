/**
 * Routes: method, path, handler. A route is either exact or a prefix whose remainder is the trailing
 * parameter ("rest of the path", which may contain `/`). A matching path with another method is 405.
 * A path with and without a final `/` names the same resource (http-conventions "Path rules" 3): an exact
 * route takes both, and so does a prefix route whose parameter is a name (a session id, a node, a check
 * id), unless the router keeps final slashes as Consul's does (the consul dialect, where the parameter is
 * everything after the prefix). A name ending in `/` is still reached with the slash encoded (`%2F`).
 * Where a final `/` is part of the parameter (a KV key, a dashboard file) the route says so (`rest: 'path'`).
 * Each route has a pattern (`/v1/kv/*` for the prefix `/v1/kv/`, the path itself for an exact route):
 * the label metrics and request logs use, from a fixed set, never a request's own path.
 */
import type { Request } from './request.ts';
import { jsonOnly } from './negotiation.ts';
import type { Reply } from './reply.ts';

export type Handler<Ctx> = (req: Request, ctx: Ctx) => Promise<Reply> | Reply;

export interface Route<Ctx> {
  path: string;
  /** When true, `path` is a prefix and the remainder becomes `req.rest`. */
  prefix: boolean;
  methods: Partial<Record<string, Handler<Ctx>>>;
  /** Served without authentication (the dashboard's static files, public like Consul's UI). @default false */
  public?: boolean;
  /**
   * The query parameters the route reads (its own, the query options, `filter`): never list parameters
   * nor equality filters of a list answer. @default none
   */
  query?: readonly string[];
  /** Largest request body the route takes, when it differs from the server's limit. @default the server's */
  bodyBytesMax?: number;
  /**
   * The route's handlers judge If-Match / If-None-Match on writes themselves, against the representation at
   * their URL (preconditions.ts); on other routes If-Match on a write is refused 412 before the handler. @default false
   */
  preconditions?: boolean;
  /**
   * What a prefix route's trailing parameter is: `name`, which a final `/` of the path does not belong to,
   * or `path` (a KV key, a file), of which a final `/` is part. @default 'name'
   */
  rest?: 'name' | 'path';
  /**
   * The media types of a method's successful answers where they are not JSON alone (a method not named here
   * answers `application/json`). The seed dialect refuses a request whose Accept allows none of them, 406
   * before the handler runs (negotiation.ts); `[]` judges nothing then: the answers carry no body, or their
   * type is known only once the handler has answered (a dashboard file), and the answer is judged on its
   * own type. @default JSON for every method
   */
  produces?: Partial<Record<string, readonly string[]>>;
}

/** How a router reads paths. */
export interface RouterOptions {
  /**
   * A final `/` after a prefix route's name parameter ends the path and is not part of the name. False in
   * the consul dialect: Consul's router takes everything after the prefix, so `/v1/session/destroy/<id>/`
   * names the session `<id>/` there. @default true
   */
  slashEndsNames?: boolean;
}

export type Match<Ctx> =
  | { kind: 'found'; handler: Handler<Ctx>; rest: string; allow: string[]; pattern: string; public: boolean; produces: readonly string[] }
  | { kind: 'method'; allow: string[]; pattern: string }
  | { kind: 'none' };

/** The pattern of paths no route serves. */
export const unmatchedPattern = 'unmatched';

interface Entry<Ctx> {
  route: Route<Ctx>;
  pattern: string;
  /** A prefix route's path without its trailing slash (made once: `find` compares every path with it). */
  bare: string;
  /** The methods the path answers, OPTIONS (every route answers it) first: the Allow of OPTIONS and of a 405, and the 405's details. */
  allow: string[];
  /** A final `/` of the parameter is dropped (the parameter is a name; see RouterOptions). */
  dropsSlash: boolean;
}

/** The route serving a path and its trailing parameter (still percent-encoded). */
export interface Found<Ctx> {
  entry: Entry<Ctx>;
  rest: string;
}

export class Router<Ctx> {
  private readonly exact = new Map<string, Entry<Ctx>>();
  private readonly prefixes: Entry<Ctx>[] = [];
  private readonly slashEndsNames: boolean;

  constructor(options: RouterOptions = {}) {
    this.slashEndsNames = options.slashEndsNames ?? true;
  }

  add(route: Route<Ctx>): this {
    const entry = {
      route, pattern: route.prefix ? `${route.path}*` : route.path, bare: route.path.slice(0, -1), allow: ['OPTIONS', ...Object.keys(route.methods)],
      dropsSlash: this.slashEndsNames && route.rest !== 'path',
    };
    if (route.prefix) {
      this.prefixes.push(entry);
      this.prefixes.sort((a, b) => b.route.path.length - a.route.path.length);
    } else {
      this.exact.set(route.path, entry);
    }
    return this;
  }

  /** `found`: the path's route when the caller looked it up already (`find`). */
  match(method: string, path: string, found = this.find(path)): Match<Ctx> {
    return found === undefined ? { kind: 'none' } : this.pick(found.entry, method, found.rest);
  }

  /** Every query parameter some route reads. */
  queryParameters(): string[] {
    const routes = [...this.exact.values(), ...this.prefixes].map((e) => e.route);
    return [...new Set(routes.flatMap((r) => r.query ?? []))];
  }

  /** The body limit of the route serving `path`, when it sets its own. */
  bodyBytesMax(path: string): number | undefined {
    return this.find(path)?.entry.route.bodyBytesMax;
  }

  /** The pattern of the route serving `path`, whatever the method, or `unmatched`. */
  pattern(path: string): string {
    const m = this.match('GET', path);
    return m.kind === 'none' ? unmatchedPattern : m.pattern;
  }

  /** The route serving `path` and its trailing parameter. */
  find(path: string): Found<Ctx> | undefined {
    const exact = this.exact.get(path) ?? (path.endsWith('/') ? this.exact.get(path.slice(0, -1)) : undefined);
    if (exact !== undefined) return { entry: exact, rest: '' };
    for (const entry of this.prefixes) {
      const prefix = entry.route.path;
      if (path.startsWith(prefix)) {
        const rest = path.slice(prefix.length);
        return { entry, rest: entry.dropsSlash && rest.endsWith('/') ? rest.slice(0, -1) : rest };
      }
      // "/v1/kv" without the trailing slash: the parameter is empty (handlers answer "Missing ...").
      if (path === entry.bare) return { entry, rest: '' };
    }
    return undefined;
  }

  private pick(entry: Entry<Ctx>, method: string, rest: string): Match<Ctx> {
    const allow = entry.allow;
    const handler = entry.route.methods[method];
    const pattern = entry.pattern;
    return handler === undefined
      ? { kind: 'method', allow, pattern }
      : { kind: 'found', handler, rest, allow, pattern, public: entry.route.public === true, produces: entry.route.produces?.[method] ?? jsonOnly };
  }
}
