/**
 * Routes: method, path, handler. A route is either exact or a prefix whose remainder is the trailing
 * parameter ("rest of the path", which may contain `/`). A matching path with another method is 405.
 */
import type { Request } from './request.ts';
import type { Reply } from './reply.ts';

export type Handler<Ctx> = (req: Request, ctx: Ctx) => Promise<Reply> | Reply;

export interface Route<Ctx> {
  path: string;
  /** When true, `path` is a prefix and the remainder becomes `req.rest`. */
  prefix: boolean;
  methods: Partial<Record<string, Handler<Ctx>>>;
  /** Served without authentication (the dashboard's static files, public like Consul's UI). @default false */
  public?: boolean;
}

export type Match<Ctx> =
  | { kind: 'found'; handler: Handler<Ctx>; rest: string; allow: string[]; public: boolean }
  | { kind: 'method'; allow: string[] }
  | { kind: 'none' };

export class Router<Ctx> {
  private readonly exact = new Map<string, Route<Ctx>>();
  private readonly prefixes: Route<Ctx>[] = [];

  add(route: Route<Ctx>): this {
    if (route.prefix) {
      this.prefixes.push(route);
      this.prefixes.sort((a, b) => b.path.length - a.path.length);
    } else {
      this.exact.set(route.path, route);
    }
    return this;
  }

  match(method: string, path: string): Match<Ctx> {
    const exact = this.exact.get(path) ?? (path.endsWith('/') ? this.exact.get(path.slice(0, -1)) : undefined);
    if (exact !== undefined) return this.pick(exact, method, '');
    for (const route of this.prefixes) {
      if (path.startsWith(route.path)) return this.pick(route, method, path.slice(route.path.length));
      // "/v1/kv" without the trailing slash: the parameter is empty (handlers answer "Missing ...").
      if (path === route.path.slice(0, -1)) return this.pick(route, method, '');
    }
    return { kind: 'none' };
  }

  private pick(route: Route<Ctx>, method: string, rest: string): Match<Ctx> {
    const allow = Object.keys(route.methods);
    const handler = route.methods[method];
    return handler === undefined ? { kind: 'method', allow } : { kind: 'found', handler, rest, allow, public: route.public === true };
  }
}
