/**
 * One floor node's front (bench/floor-server.ts): the HTTP calls the bench's Roster driver makes, read by
 * uWebSockets.js as Roster reads them, turned into log entries; the answers written when the node applies
 * them (locks.ts). Which log the entries go through (a file, a JetStream stream) is the server's choice.
 *
 * Calls: `PUT /v1/session/create` → `{"ID":…}`; `PUT /v1/session/destroy/<id>` (releases what it holds);
 * `PUT /v1/kv/<key>?acquire=<id>` → `true`/`false`, with `&wait=<n>ms` queued until the holder releases
 * or the wait ends; `PUT /v1/kv/<key>?release=<id>` → `true`/`false`; `DELETE /v1/kv/<key>` → `true`.
 * Anything else: 404.
 */
import type * as Uws from 'uWebSockets.js';
import { loadUws, readBody } from '../../src/http/uws.ts';
import { LockTable, type Entry, type Replies } from './locks.ts';

/** Loaded as Roster loads it: the same package, build and head size limit. */
export const uws = loadUws();

/** The largest request body read; the bench's are a few bytes. */
const bodyBytesMax = 64 * 1024;
/** The longest wait a queued acquire may ask for. */
const waitMsMax = 600_000;

/** Where a node's entries go; each is applied (`FloorNode.table.apply`) once the log holds it. */
export interface FloorLog {
  append(entry: Entry): void;
}

/** A request waiting for its answer, with the timer of its wait while it is a queued acquire. */
interface Exchange {
  res: Uws.HttpResponse;
  done: boolean;
  paused: boolean;
  id: number;
  timer?: NodeJS.Timeout;
}

type Proposed = Entry extends infer E ? E extends Entry ? Omit<E, 'p'> : never : never;

function write(ex: Exchange, status: string, body: string): void {
  if (ex.done) return;
  ex.done = true;
  ex.res.cork(() => {
    if (ex.paused) ex.res.resume();
    ex.res.writeStatus(`${status}\r\ncontent-type: application/json\r\nx-request-id: ${ex.id}`).end(body);
  });
}

function waitOf(query: URLSearchParams): number {
  const m = /^(\d+)ms$/.exec(query.get('wait') ?? '');
  return m === null ? 0 : Math.min(Number(m[1]), waitMsMax);
}

export class FloorNode implements Replies {
  readonly table = new LockTable(this);
  /** Requests taken here and not answered yet, by entry id. */
  private readonly exchanges = new Map<string, Exchange>();
  private requestSeq = 0;
  private sessionSeq = 0;
  private log: FloorLog | undefined;

  /** `name` prefixes this node's entry ids and session ids, so that they are unique in the cluster. */
  constructor(private readonly name: string) {}

  /** Serves on 127.0.0.1:`port` (0: any), writing entries to `log`; resolves with the port. */
  listen(log: FloorLog, port = 0): Promise<{ port: number; close(): void }> {
    this.log = log;
    const app = uws.App().any('/*', (res, req) => this.onRequest(res, req));
    return new Promise((resolve, reject) => {
      app.listen('127.0.0.1', port, (socket) => {
        if (socket === false) return reject(new Error(`cannot listen on 127.0.0.1:${port}`));
        resolve({
          port: uws.us_socket_local_port(socket as unknown as Uws.us_socket),
          close: () => { uws.us_listen_socket_close(socket); app.close(); },
        });
      });
    });
  }

  answer(p: string, status: string, body: string): void {
    const ex = this.exchanges.get(p);
    if (ex === undefined) return;
    this.exchanges.delete(p);
    clearTimeout(ex.timer);
    write(ex, status, body);
  }

  waiting(p: string, key: string, waitMs: number): void {
    const ex = this.exchanges.get(p);
    if (ex !== undefined) ex.timer = setTimeout(() => this.log!.append({ t: 'cancel', key, p }), waitMs);
  }

  private onRequest(res: Uws.HttpResponse, req: Uws.HttpRequest): void {
    const method = req.getMethod().toUpperCase();
    const url = req.getUrl();
    const query = new URLSearchParams(req.getQuery() ?? '');
    const ex: Exchange = { res, done: false, paused: false, id: ++this.requestSeq };
    res.onAborted(() => { ex.done = true; });
    readBody(res, bodyBytesMax, (body) => {
      // As in Roster, a write starts one turn later, after uWS has parsed whatever came in with it.
      setImmediate(() => { if (!ex.done) this.route(method, url, query, body, ex); });
    }, () => write(ex, '413 Payload Too Large', '"body too large"'));
  }

  private route(method: string, url: string, query: URLSearchParams, body: Buffer, ex: Exchange): void {
    if (method === 'PUT' && url === '/v1/session/create') return this.propose({ t: 'session', id: `${this.name}-${++this.sessionSeq}` }, ex);
    if (method === 'PUT' && url.startsWith('/v1/session/destroy/')) return this.propose({ t: 'destroy', id: decodeURIComponent(url.slice(20)) }, ex);
    if (url.startsWith('/v1/kv/') && url.length > 7) {
      const key = decodeURIComponent(url.slice(7));
      if (method === 'DELETE') return this.propose({ t: 'delete', key }, ex);
      const acquire = query.get('acquire');
      if (method === 'PUT' && acquire !== null) {
        return this.propose({ t: 'acquire', key, session: acquire, value: body.toString('base64'), wait: waitOf(query) }, ex);
      }
      const release = query.get('release');
      if (method === 'PUT' && release !== null) return this.propose({ t: 'release', key, session: release }, ex);
    }
    write(ex, '404 Not Found', '"not a call of the floor server"');
  }

  private propose(entry: Proposed, ex: Exchange): void {
    // Reading stops while the write commits, as in Roster: a request pipelined behind it waits in the kernel.
    if (entry.t !== 'acquire' || entry.wait === 0) {
      ex.res.pause();
      ex.paused = true;
    }
    const p = `${this.name}.${ex.id}`;
    this.exchanges.set(p, ex);
    this.log!.append({ ...entry, p } as Entry);
  }
}
