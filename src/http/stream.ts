/**
 * `GET /v1/stream`: the WebSocket subscription protocol of watch.md §4 on the uWS app. A client
 * subscribes to a topic and key; it gets a snapshot then live events stamped with the registry index,
 * or, resuming from an index this node still holds, only what changed since (else `reset` + snapshot).
 * Events are computed once per view for each applied entry and fanned out to the view's subscribers;
 * several changes at one index travel as one `batch`. A slow reader's events are coalesced per item
 * (newest wins — events carry full state) and flushed as one batch on drain; past the hard limits the
 * connection is closed with 4008. Nothing is ever silently dropped.
 */
import { randomUUID } from 'node:crypto';
import type * as Uws from 'uWebSockets.js';
import { allowed, allowedPrefix, type AccessRequest, type Identity } from '../auth/index.ts';
import { RegistryError } from '../domain/errors.ts';
import type { Change } from '../runtime/index.ts';
import type { ApiContext } from './api.ts';
import { renderError, statusLine, type Wire } from './render.ts';
import { makeView, type TopicView, type ViewFilter } from './stream-views.ts';
import { timerStepMsMax } from '../util/timer.ts';

export const streamSubprotocol = 'registry.stream.v1';

export interface StreamOptions {
  /** A bookmark after this much silence on a connection. @default 30 s */
  bookmarkIntervalMs?: number;
  /** Above this many buffered bytes, events are held and coalesced. @default 1 MiB */
  bufferedBytesSoft?: number;
  /** Above this many buffered and held bytes the reader is closed with 4008. @default 4 MiB */
  bufferedBytesHard?: number;
  /** Held events (distinct items) beyond which the reader is closed with 4008. @default 10000 */
  pendingItemsMax?: number;
  /** @default 64 */
  subscriptionsMax?: number;
  /** Approximate size of one snapshot frame's items. @default 64 KiB */
  snapshotFrameBytes?: number;
  /** Ordered messages (snapshots) waiting for the socket beyond which the reader is closed with 4008. @default 64 MiB */
  outboxBytesMax?: number;
  /** Open stream connections per client (token subject, else address); more are refused 429. @default 64 */
  connectionsPerClientMax?: number;
  /** Authentication of the upgrade (absent: the stream is open, as the HTTP API is without auth). */
  auth?: StreamAuth;
}

/** Who opens a stream: the identity of a bearer token from a header, `?token=` or a `bearer.` subprotocol. */
export interface StreamAuth {
  bearer(headers: Map<string, string>, query: URLSearchParams, subprotocolToken?: string): Promise<Identity>;
}

interface Sub {
  id: string;
  conn: Conn;
  view: View;
}

interface View {
  id: string;
  topic: TopicView;
  items: Map<string, string>;
  subs: Set<Sub>;
}

interface PendingEvent {
  subId: string;
  key: string;
  /** undefined: delete */
  value: string | undefined;
  index: number;
}

interface Conn {
  ws: Uws.WebSocket<ConnData>;
  subs: Map<string, Sub>;
  /** Messages that must go out in order (snapshot frames, control messages) once the socket drains. */
  outbox: string[];
  outboxBytes: number;
  /** Live events held for a slow reader, newest state per item, and their size. */
  pending: Map<string, PendingEvent>;
  pendingBytes: number;
  lastSentMs: number;
  closed: boolean;
  /** Whose connection this is, for the per-client cap. */
  client: string;
  identity: Identity | undefined;
  /** Ends the connection with 4001 when the token expires. */
  expiry: NodeJS.Timeout | undefined;
}

interface ConnData {
  conn?: Conn;
  client: string;
  identity: Identity | undefined;
}

type Out = { op: 'upsert' | 'delete'; key: string; value: string | undefined };

const closeCodes = { normal: 1000, goingAway: 1001, policy: 1008, internal: 1011, tokenExpired: 4001, slowConsumer: 4008 } as const;

/** The subprotocol prefix that carries a bearer token for browsers (watch.md §4.1). */
const bearerSubprotocol = 'bearer.';

export class StreamServer {
  readonly epoch = randomUUID().slice(0, 8);
  private readonly views = new Map<string, View>();
  private readonly conns = new Set<Conn>();
  private readonly perClient = new Map<string, number>();
  private readonly o: Required<Omit<StreamOptions, 'auth'>> & Pick<StreamOptions, 'auth'>;
  private readonly unsubscribeChanges: () => void;
  private readonly bookmarkTimer: NodeJS.Timeout;

  constructor(private readonly api: ApiContext, options: StreamOptions = {}) {
    this.o = {
      bookmarkIntervalMs: options.bookmarkIntervalMs ?? 30_000,
      bufferedBytesSoft: options.bufferedBytesSoft ?? 1024 * 1024,
      bufferedBytesHard: options.bufferedBytesHard ?? 4 * 1024 * 1024,
      pendingItemsMax: options.pendingItemsMax ?? 10_000,
      subscriptionsMax: options.subscriptionsMax ?? 64,
      snapshotFrameBytes: options.snapshotFrameBytes ?? 64 * 1024,
      outboxBytesMax: options.outboxBytesMax ?? 64 * 1024 * 1024,
      connectionsPerClientMax: options.connectionsPerClientMax ?? 64,
      auth: options.auth,
    };
    this.unsubscribeChanges = api.runtime.changes.subscribe((change) => this.onChange(change));
    // Capped at Node's timer limit (about 24.8 days), past which setInterval would fire every millisecond.
    this.bookmarkTimer = setInterval(() => this.bookmarks(), Math.min(Math.max(100, this.o.bookmarkIntervalMs / 4), timerStepMsMax));
    this.bookmarkTimer.unref();
  }

  /** The uWS behaviour for `app.ws('/v1/stream', ...)`. */
  behavior(): Uws.WebSocketBehavior<ConnData> {
    return {
      maxPayloadLength: 16 * 1024,
      idleTimeout: 60,
      sendPingsAutomatically: true,
      // A safety net only: the soft and hard limits above act long before this.
      maxBackpressure: 8 * 1024 * 1024,
      closeOnBackpressureLimit: 1, // typed as a number in this build; any non-zero value turns it on
      upgrade: (res, req, context) => this.upgrade(res, req, context),
      open: (ws) => this.open(ws),
      message: (ws, message) => this.message(ws, Buffer.from(message).toString('utf8')),
      drain: (ws) => this.drain(ws.getUserData().conn),
      close: (ws) => this.close(ws.getUserData().conn),
    };
  }

  get connections(): number {
    return this.conns.size;
  }

  /** Subscriptions over all open connections (read at metrics scrapes: one pass over the connections). */
  get subscriptions(): number {
    let n = 0;
    for (const conn of this.conns) n += conn.subs.size;
    return n;
  }

  /** Shutdown: every connection gets 1001 before the app closes its sockets. */
  closeAll(): void {
    clearInterval(this.bookmarkTimer);
    this.unsubscribeChanges();
    for (const conn of [...this.conns]) this.end(conn, closeCodes.goingAway, 'server shutting down');
  }

  // ---------------------------------------------------------------- connection life

  /**
   * The upgrade (watch.md §4.1): the subprotocol must be ours when any is offered; with authentication
   * on, a valid token (Authorization, X-Consul-Token, `?token=` or a `bearer.<base64url>` subprotocol)
   * or 401; then the per-client cap or 429. Refusals are answered in the dialect's error format.
   */
  private upgrade(res: Uws.HttpResponse, req: Uws.HttpRequest, context: Uws.us_socket_context_t): void {
    const key = req.getHeader('sec-websocket-key');
    const extensions = req.getHeader('sec-websocket-extensions');
    const protocols = req.getHeader('sec-websocket-protocol').split(',').map((p) => p.trim()).filter((p) => p !== '');
    const headers = new Map<string, string>();
    req.forEach((k, v) => headers.set(k, v));
    const query = new URLSearchParams(req.getQuery() ?? '');
    const remote = Buffer.from(res.getRemoteAddressAsText()).toString();
    if (protocols.length > 0 && !protocols.includes(streamSubprotocol)) {
      this.reject(res, new RegistryError('invalidParameter', `unsupported subprotocol; use ${streamSubprotocol}`, { offered: protocols.filter((p) => !p.startsWith(bearerSubprotocol)) }));
      return;
    }
    // `corked` wraps writes made after an await (uWS wants them corked); the upgrade itself is not wrapped.
    const accept = (identity: Identity | undefined, corked: (write: () => void) => void) => {
      const client = identity !== undefined ? `token:${identity.subject}` : `address:${remote}`;
      if ((this.perClient.get(client) ?? 0) >= this.o.connectionsPerClientMax) {
        corked(() => this.reject(res, new RegistryError('illegalRequest', `too many stream connections: at most ${this.o.connectionsPerClientMax} per client`,
          { connectionsMax: this.o.connectionsPerClientMax }, { status: 429, text: 'too many stream connections' }, [['Retry-After', '1']]), 429));
        return;
      }
      // Echo only our protocol, never the token (watch.md §4.1).
      res.upgrade<ConnData>({ client, identity }, key, protocols.length > 0 ? streamSubprotocol : '', extensions, context);
    };
    if (this.o.auth === undefined) {
      accept(undefined, (write) => write());
      return;
    }
    const carried = protocols.find((p) => p.startsWith(bearerSubprotocol));
    const subprotocolToken = carried === undefined ? undefined : Buffer.from(carried.slice(bearerSubprotocol.length), 'base64url').toString('utf8');
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    this.o.auth.bearer(headers, query, subprotocolToken).then(
      // Not inside cork(): uWebSockets.js 20.x now and then closes (1006) a socket upgraded after an await
      // within cork() right after its open (uNetworking/uWebSockets issue 1928, fixed upstream by PR 1929;
      // seen here in about 1 of 15 authenticated connections, never without auth).
      (identity) => { if (!aborted) accept(identity, (write) => res.cork(write)); },
      (err: unknown) => {
        if (aborted) return;
        const refusal = err instanceof RegistryError ? err : new RegistryError('unknown', 'authentication failed');
        res.cork(() => this.reject(res, refusal));
      },
    );
  }

  private reject(res: Uws.HttpResponse, err: RegistryError, status?: number): void {
    const w: Wire = renderError(err, this.api.dialect, [], status);
    res.writeStatus(statusLine(w.status));
    for (const [k, v] of w.headers) res.writeHeader(k, v);
    res.end(w.body);
  }

  private open(ws: Uws.WebSocket<ConnData>): void {
    const { client, identity } = ws.getUserData();
    const conn: Conn = {
      ws, subs: new Map(), outbox: [], outboxBytes: 0, pending: new Map(), pendingBytes: 0, lastSentMs: Date.now(), closed: false,
      client, identity, expiry: undefined,
    };
    ws.getUserData().conn = conn;
    this.conns.add(conn);
    this.perClient.set(client, (this.perClient.get(client) ?? 0) + 1);
    if (identity?.expiresAtMs !== undefined) {
      // setTimeout holds at most about 24.8 days; a later expiry is looked at again then.
      const arm = () => {
        const left = identity.expiresAtMs! - Date.now();
        conn.expiry = left <= 0
          ? undefined
          : setTimeout(arm, Math.min(left, 2 ** 31 - 1));
        conn.expiry?.unref();
        if (left <= 0) this.end(conn, closeCodes.tokenExpired, 'token expired');
      };
      arm();
    }
  }

  private close(conn: Conn | undefined): void {
    if (conn === undefined) return;
    conn.closed = true;
    clearTimeout(conn.expiry);
    const left = (this.perClient.get(conn.client) ?? 1) - 1;
    if (left <= 0) this.perClient.delete(conn.client);
    else this.perClient.set(conn.client, left);
    for (const sub of conn.subs.values()) this.leave(sub);
    conn.subs.clear();
    conn.pending.clear();
    conn.outbox.length = 0;
    this.conns.delete(conn);
  }

  private end(conn: Conn, code: number, reason: string): void {
    if (conn.closed) return;
    conn.closed = true;
    conn.ws.end(code, reason);
  }

  // ---------------------------------------------------------------- client messages

  private message(ws: Uws.WebSocket<ConnData>, text: string): void {
    const conn = ws.getUserData().conn;
    if (conn === undefined || conn.closed) return;
    let msg: Record<string, unknown>;
    try {
      const parsed = JSON.parse(text) as unknown;
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      msg = parsed as Record<string, unknown>;
    } catch {
      this.end(conn, closeCodes.policy, 'messages must be JSON objects');
      return;
    }
    if (msg.op === 'subscribe') this.subscribe(conn, msg);
    else if (msg.op === 'unsubscribe') this.unsubscribe(conn, msg);
    else this.end(conn, closeCodes.policy, `unknown op ${JSON.stringify(String(msg.op)).slice(0, 60)}`);
  }

  private refuse(conn: Conn, id: unknown, code: string, message: string): void {
    this.send(conn, JSON.stringify({ type: 'error', id: typeof id === 'string' ? id : null, code, message }));
  }

  private subscribe(conn: Conn, msg: Record<string, unknown>): void {
    const { id, topic, key, index, epoch, filter } = msg;
    if (typeof id !== 'string' || id === '' || id.length > 128) return this.refuse(conn, id, 'bad_request', 'id must be a non-empty string of at most 128 characters');
    if (conn.subs.has(id)) return this.refuse(conn, id, 'already_subscribed', `subscription "${id}" exists on this connection`);
    if (conn.subs.size >= this.o.subscriptionsMax) return this.refuse(conn, id, 'too_many_subscriptions', `at most ${this.o.subscriptionsMax} subscriptions per connection`);
    if (typeof key !== 'string') return this.refuse(conn, id, 'bad_key', 'key must be a string');
    if (index !== undefined && (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0)) return this.refuse(conn, id, 'bad_request', 'index must be a non-negative integer');
    if (filter !== undefined && (filter === null || typeof filter !== 'object')) return this.refuse(conn, id, 'bad_request', 'filter must be an object');
    const asked = filter as ViewFilter | undefined;
    const viewFilter: ViewFilter = { passingOnly: asked?.passingOnly === true, lockedOnly: asked?.lockedOnly === true };
    const made = makeView(String(topic), key, viewFilter, this.api);
    if ('error' in made) return this.refuse(conn, id, made.error, made.error === 'unknown_topic' ? `unknown topic ${JSON.stringify(topic)}` : `bad key ${JSON.stringify(key)} for topic ${String(topic)}`);
    if (conn.identity !== undefined && !mayWatch(conn.identity, String(topic), key)) {
      return this.refuse(conn, id, 'forbidden', `permission denied: read on ${String(topic)} ${JSON.stringify(key)}`);
    }
    const view = this.viewFor(`${String(topic)}\0${key}\0${viewFilter.passingOnly ? 1 : 0}${viewFilter.lockedOnly ? 1 : 0}`, made);
    const sub: Sub = { id, conn, view };
    // Snapshot or replay, then live, in one synchronous step: no change can fall in between.
    conn.subs.set(id, sub);
    view.subs.add(sub);
    this.start(sub, typeof index === 'number' ? index : 0, typeof epoch === 'string' ? epoch : undefined);
  }

  private start(sub: Sub, index: number, epoch: string | undefined): void {
    const current = this.api.runtime.state.index;
    if (index > 0) {
      const epochMatches = epoch === undefined || epoch === this.epoch;
      const changes = epochMatches && index <= current ? this.api.runtime.changes.since(index) : undefined;
      if (changes !== undefined) return this.resume(sub, changes, current);
      const reason = !epochMatches || index > current ? 'epoch_changed' : 'index_too_old';
      this.send(sub.conn, JSON.stringify({ type: 'subscribed', id: sub.id, index: current, epoch: this.epoch, resumed: false }));
      this.send(sub.conn, JSON.stringify({ type: 'reset', id: sub.id, reason }));
      return this.snapshot(sub, current);
    }
    this.send(sub.conn, JSON.stringify({ type: 'subscribed', id: sub.id, index: current, epoch: this.epoch, resumed: false }));
    this.snapshot(sub, current);
  }

  /** Everything the client missed, as one batch at the current index (newest state of each item). */
  private resume(sub: Sub, changes: Change[], current: number): void {
    this.send(sub.conn, JSON.stringify({ type: 'subscribed', id: sub.id, index: current, epoch: this.epoch, resumed: true }));
    const seen = new Map<string, Out>();
    for (const change of changes) {
      for (const c of sub.view.topic.candidates(change)) {
        if (seen.has(c.key)) continue;
        const value = c.value();
        seen.set(c.key, { op: value === undefined ? 'delete' : 'upsert', key: c.key, value });
      }
    }
    if (seen.size > 0) this.deliver(sub, current, [...seen.values()]);
  }

  private snapshot(sub: Sub, index: number): void {
    const items = [...sub.view.items];
    let frame: [string, string][] = [];
    let bytes = 0;
    const flush = (more: boolean) => {
      const keys = frame.map(([k]) => JSON.stringify(k)).join(',');
      const values = frame.map(([, v]) => v).join(',');
      this.send(sub.conn, `{"type":"snapshot","id":${JSON.stringify(sub.id)},"index":${index},"keys":[${keys}],"items":[${values}],"more":${more}}`);
      frame = [];
      bytes = 0;
    };
    sub.conn.ws.cork(() => {
      for (const item of items) {
        frame.push(item);
        bytes += item[1].length;
        if (bytes >= this.o.snapshotFrameBytes) flush(true);
      }
      flush(false);
      this.send(sub.conn, JSON.stringify({ type: 'end_of_snapshot', id: sub.id, index }));
    });
  }

  private unsubscribe(conn: Conn, msg: Record<string, unknown>): void {
    const sub = typeof msg.id === 'string' ? conn.subs.get(msg.id) : undefined;
    if (sub === undefined) return this.refuse(conn, msg.id, 'unknown_subscription', `no subscription ${JSON.stringify(msg.id)} on this connection`);
    conn.subs.delete(sub.id);
    for (const [k, p] of conn.pending) {
      if (p.subId !== sub.id) continue;
      conn.pending.delete(k);
      conn.pendingBytes -= p.value?.length ?? 0;
    }
    this.leave(sub);
    this.send(conn, JSON.stringify({ type: 'unsubscribed', id: sub.id }));
  }

  // ---------------------------------------------------------------- views and fan-out

  private viewFor(id: string, topic: TopicView): View {
    let view = this.views.get(id);
    if (view === undefined) {
      view = { id, topic, items: new Map(topic.snapshot()), subs: new Set() };
      this.views.set(id, view);
    }
    return view;
  }

  private leave(sub: Sub): void {
    sub.view.subs.delete(sub);
    if (sub.view.subs.size === 0) this.views.delete(sub.view.id);
  }

  /** One applied entry: each view works out what changed for it once, then tells its subscribers. */
  private onChange(change: Change): void {
    for (const view of this.views.values()) {
      const out: Out[] = [];
      for (const c of view.topic.candidates(change)) {
        const value = c.value();
        const before = view.items.get(c.key);
        if (value === before) continue;
        if (value === undefined) view.items.delete(c.key);
        else view.items.set(c.key, value);
        out.push({ op: value === undefined ? 'delete' : 'upsert', key: c.key, value });
      }
      if (out.length === 0) continue;
      for (const sub of view.subs) this.deliver(sub, change.index, out);
    }
  }

  private deliver(sub: Sub, index: number, events: Out[]): void {
    const conn = sub.conn;
    if (conn.closed) return;
    if (conn.outbox.length > 0 || conn.pending.size > 0 || conn.ws.getBufferedAmount() > this.o.bufferedBytesSoft) {
      this.hold(conn, sub.id, index, events);
      return;
    }
    this.write(conn, render(sub.id, index, events));
  }

  /** A slow reader: keep only the newest state per item, within the hard limits. */
  private hold(conn: Conn, subId: string, index: number, events: Out[]): void {
    for (const e of events) {
      const slot = `${subId}\0${e.key}`;
      conn.pendingBytes -= conn.pending.get(slot)?.value?.length ?? 0;
      conn.pending.set(slot, { subId, key: e.key, value: e.value, index });
      conn.pendingBytes += e.value?.length ?? 0;
    }
    const heldBytes = conn.ws.getBufferedAmount() + conn.pendingBytes;
    if (conn.pending.size > this.o.pendingItemsMax || heldBytes > this.o.bufferedBytesHard) {
      this.end(conn, closeCodes.slowConsumer, 'slow consumer');
    }
  }

  /** The socket drained: ordered messages first, then the held events as one batch per subscription. */
  private drain(conn: Conn | undefined): void {
    if (conn === undefined || conn.closed) return;
    this.flushOutbox(conn);
    if (conn.closed || conn.outbox.length > 0 || conn.pending.size === 0) return;
    if (conn.ws.getBufferedAmount() > this.o.bufferedBytesSoft) return;
    const bySub = new Map<string, { index: number; events: Out[] }>();
    for (const p of conn.pending.values()) {
      const group = bySub.get(p.subId) ?? { index: 0, events: [] };
      group.index = Math.max(group.index, p.index);
      group.events.push({ op: p.value === undefined ? 'delete' : 'upsert', key: p.key, value: p.value });
      bySub.set(p.subId, group);
    }
    conn.pending.clear();
    conn.pendingBytes = 0;
    conn.ws.cork(() => {
      for (const [subId, g] of bySub) this.write(conn, renderBatch(subId, g.index, g.events));
    });
  }

  private flushOutbox(conn: Conn): void {
    if (conn.outbox.length === 0) return;
    conn.ws.cork(() => {
      let sent = 0;
      while (sent < conn.outbox.length && !conn.closed && conn.ws.getBufferedAmount() <= this.o.bufferedBytesSoft) {
        const text = conn.outbox[sent++]!;
        conn.outboxBytes -= text.length;
        this.write(conn, text);
      }
      conn.outbox.splice(0, sent);
    });
  }

  private bookmarks(): void {
    const now = Date.now();
    const index = this.api.runtime.state.index;
    for (const conn of this.conns) {
      if (conn.closed || conn.pending.size > 0 || conn.outbox.length > 0 || now - conn.lastSentMs < this.o.bookmarkIntervalMs) continue;
      this.send(conn, JSON.stringify({ type: 'bookmark', index }));
    }
  }

  /**
   * Sends a message that must keep its place (control messages, snapshot frames): behind anything
   * already waiting, and held in the outbox while the socket is backed up.
   */
  private send(conn: Conn, text: string): void {
    if (conn.closed) return;
    if (conn.outbox.length > 0 || conn.ws.getBufferedAmount() > this.o.bufferedBytesSoft) {
      conn.outbox.push(text);
      conn.outboxBytes += text.length;
      if (conn.outboxBytes > this.o.outboxBytesMax) this.end(conn, closeCodes.slowConsumer, 'slow consumer');
      return;
    }
    this.write(conn, text);
  }

  /** Writes one message; a dropped one (2) would break the delta stream, so the connection is ended. */
  private write(conn: Conn, text: string): void {
    if (conn.closed) return;
    conn.lastSentMs = Date.now();
    if (conn.ws.send(text, false) === 2) this.end(conn, closeCodes.slowConsumer, 'slow consumer');
  }
}

/**
 * The read a subscription needs, as the matching HTTP query would: a service's health or checks need
 * read on the service (every service's health: read on all of them); a node's checks, or checks by state, read on nodes; a node's
 * sessions read on that node's sessions (every node's: read on all of them, as a prefix).
 * A KV prefix needs read on the prefix and on every rule below it, since the view shows every key.
 */
function mayWatch(identity: Identity, topic: string, key: string): boolean {
  const need = (resource: AccessRequest['resource'], name: string): AccessRequest => ({ resource, name, access: 'read' });
  switch (topic) {
    // Every service (the `""` subject of service_health): read on every service rule, as a prefix.
    case 'service_health': return key === '' ? allowedPrefix(identity, need('service', '')) : allowed(identity, need('service', key));
    case 'service_checks': case 'serving_status': return allowed(identity, need('service', key));
    case 'node_checks': return allowed(identity, need('node', key));
    case 'checks_in_state': return allowed(identity, need('node', ''));
    case 'sessions': return key === '' ? allowedPrefix(identity, need('session', '')) : allowed(identity, need('session', key));
    case 'kv_prefix': return allowedPrefix(identity, need('key', key));
    default: return false;
  }
}

function renderOne(e: Out): string {
  return e.op === 'delete'
    ? `{"op":"delete","key":${JSON.stringify(e.key)}}`
    : `{"op":"upsert","key":${JSON.stringify(e.key)},"value":${e.value}}`;
}

function renderBatch(subId: string, index: number, events: Out[]): string {
  return `{"type":"batch","id":${JSON.stringify(subId)},"index":${index},"events":[${events.map(renderOne).join(',')}]}`;
}

function render(subId: string, index: number, events: Out[]): string {
  if (events.length > 1) return renderBatch(subId, index, events);
  const e = events[0]!;
  const value = e.op === 'delete' ? '' : `,"value":${e.value}`;
  return `{"type":"event","id":${JSON.stringify(subId)},"index":${index},"op":"${e.op}","key":${JSON.stringify(e.key)}${value}}`;
}
