/**
 * `GET /v1/stream`: the WebSocket subscription protocol of watch.md §4 on the uWS app. A client
 * subscribes to a topic and key; it gets a snapshot then live events stamped with the registry index,
 * or, resuming from an index this node still holds, only what changed since (else `reset` + snapshot).
 * Events are computed once per view for each applied entry and fanned out to the view's subscribers;
 * several changes at one index travel as one `batch`.
 *
 * Memory is bounded by budgets, never by the reader's goodwill: a snapshot is read from state a page
 * at a time, only while the socket is below the soft limit and the agent's snapshot pages in flight are
 * within their budget, so a reader that stops reading costs one page, not its prefix. A slow reader's
 * live events are coalesced per item (newest wins — events carry full state) and flushed as one batch on
 * drain; a connection whose queued bytes (events and messages waiting in uWS and here) pass the hard
 * limit is closed with 4008. Nothing is ever silently dropped.
 */
import { randomUUID } from 'node:crypto';
import type * as Uws from 'uWebSockets.js';
import { intervalMs } from '../ports/clock.ts';
import type { Change } from '../runtime/index.ts';
import type { ApiContext } from './api.ts';
import { closeCodes, endConn, nativePayloadBytesMax, Queue, streamSettings, type Conn, type ConnData, type Out, type StreamOptions, type StreamSettings, type Sub } from './stream-conn.ts';
import { Outflow } from './stream-outflow.ts';
import { subscribeRequest, Views } from './stream-subscriptions.ts';
import { Upgrade, type UpgradeHost } from './stream-upgrade.ts';
import { setLongTimeout } from '../util/timer.ts';

export { streamSubprotocol, type StreamAuth, type StreamOptions } from './stream-conn.ts';

export class StreamServer {
  readonly epoch = randomUUID().slice(0, 8);
  private readonly conns = new Set<Conn>();
  private readonly perClient = new Map<string, number>();
  /** Connections closed with 4008 whose socket is not gone yet: they still count in `perClient` (see release). */
  private readonly clientSlotHeld = new Set<Conn>();
  private readonly o: StreamSettings;
  private readonly views: Views;
  private readonly outflow: Outflow;
  private readonly upgradeHost: UpgradeHost;
  private readonly unsubscribeChanges: () => void;
  private readonly bookmarkTimer: NodeJS.Timeout;

  constructor(private readonly api: ApiContext, options: StreamOptions = {}) {
    this.o = streamSettings(options);
    this.views = new Views(this.o, () => api.runtime.state, () => api.runtime.changes.floor);
    this.outflow = new Outflow(this.o, this.conns, (conn) => this.release(conn, true));
    this.upgradeHost = {
      dialect: api.dialect, o: this.o,
      connections: () => this.conns.size,
      connectionsOf: (client) => this.perClient.get(client) ?? 0,
    };
    this.unsubscribeChanges = api.runtime.changes.subscribe((change) => this.onChange(change));
    // Bookmarks, and snapshots waiting for the agent's budget when no drain came to wake them; closes
    // that waited long enough for their socket to drain. Views idle past their time go too.
    this.bookmarkTimer = setInterval(() => { this.bookmarks(); this.outflow.wakeWaiting(); const now = intervalMs(); this.outflow.sweepClosing(now); this.views.sweep(now); }, Math.max(100, Math.min(1000, this.o.bookmarkIntervalMs / 4)));
    this.bookmarkTimer.unref();
  }

  /** New connection and budget limits (a reload), for the connections open and those to come. */
  setLimits(limits: Pick<StreamOptions, 'connectionsPerClientMax' | 'connectionsMax' | 'pendingItemsMax' | 'snapshotBytesMax'>): void {
    const next = streamSettings(limits);
    Object.assign(this.o, { connectionsPerClientMax: next.connectionsPerClientMax, connectionsMax: next.connectionsMax, pendingItemsMax: next.pendingItemsMax, snapshotBytesMax: next.snapshotBytesMax });
  }

  /** The uWS behaviour for `app.ws('/v1/stream', ...)`. */
  behavior(): Uws.WebSocketBehavior<ConnData> {
    return {
      // uWS itself cuts a larger message without a close frame; up to it, messageBytesMax gives 1009.
      maxPayloadLength: nativePayloadBytesMax,
      idleTimeout: 60,
      sendPingsAutomatically: true,
      // A safety net only: writes stop at the soft limit, and one message (a page, an event with a 512 KiB
      // value as base64, a flushed batch within the hard limit) stays below this.
      maxBackpressure: 2 * (this.o.bufferedBytesSoft + this.o.bufferedBytesHard + this.o.snapshotFrameBytes) + 2 * 1024 * 1024,
      closeOnBackpressureLimit: 1, // typed as a number in this build; any non-zero value turns it on
      upgrade: (res, req, context) => new Upgrade(this.upgradeHost, res, req, context).run(),
      open: (ws) => this.open(ws),
      message: (ws, message, isBinary) => this.message(ws, message, isBinary),
      drain: (ws) => this.outflow.drain(ws.getUserData().conn),
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
    for (const conn of [...this.conns]) endConn(conn, closeCodes.goingAway, 'server shutting down');
    this.outflow.endAllClosing();
  }

  // ---------------------------------------------------------------- connection life

  private open(ws: Uws.WebSocket<ConnData>): void {
    const { client, caller, identity } = ws.getUserData();
    const conn: Conn = {
      ws, subs: new Map(), outbox: new Queue(), outboxBytes: 0, snapshotInFlight: 0, pending: new Map(), pendingItems: 0, pendingBytes: 0,
      lastSentMs: intervalMs(), closed: false, closing: undefined, client, caller, identity, expiry: undefined,
    };
    ws.getUserData().conn = conn;
    this.conns.add(conn);
    this.perClient.set(client, (this.perClient.get(client) ?? 0) + 1);
    if (identity?.expiresAtMs !== undefined) {
      conn.expiry = setLongTimeout(() => endConn(conn, closeCodes.tokenExpired, 'token expired'), identity.expiresAtMs - Date.now());
    }
  }

  /** uWS closed the socket. */
  private close(conn: Conn | undefined): void {
    if (conn === undefined) return;
    conn.closed = true;
    conn.closing = undefined;
    this.release(conn);
    // One closed with 4008 was released already but kept its client's slot until its socket is gone.
    if (this.clientSlotHeld.delete(conn)) this.freeClientSlot(conn);
    this.outflow.closed(conn);
  }

  /**
   * A connection's subscriptions, held events, queue and slot go: at its close, or once it is closed with
   * 4008 (`closing`), whose socket still holds what uWS buffered for it until it drains: that one keeps its
   * place in its client's count until then, so a client closed as slow cannot open another in its stead.
   */
  private release(conn: Conn, closing = false): void {
    if (!this.conns.delete(conn)) return;
    conn.expiry?.clear();
    if (closing) this.clientSlotHeld.add(conn);
    else this.freeClientSlot(conn);
    for (const sub of conn.subs.values()) this.views.leave(sub);
    conn.subs.clear();
    conn.pending.clear();
    conn.pendingItems = 0;
    conn.pendingBytes = 0;
    conn.outbox.clear();
    conn.outboxBytes = 0;
    this.outflow.closed(conn);
  }

  private freeClientSlot(conn: Conn): void {
    const left = (this.perClient.get(conn.client) ?? 1) - 1;
    if (left <= 0) this.perClient.delete(conn.client);
    else this.perClient.set(conn.client, left);
  }

  // ---------------------------------------------------------------- client messages

  /** uWS has checked a text message's UTF-8 (it cuts the connection on invalid UTF-8 before this). */
  private message(ws: Uws.WebSocket<ConnData>, message: ArrayBuffer, isBinary: boolean): void {
    const conn = ws.getUserData().conn;
    if (conn === undefined || conn.closed) return;
    if (message.byteLength > this.o.messageBytesMax) {
      endConn(conn, closeCodes.tooBig, `message too big: at most ${this.o.messageBytesMax} bytes`);
      return;
    }
    if (isBinary) {
      endConn(conn, closeCodes.unsupportedData, 'messages must be JSON text frames');
      return;
    }
    const text = Buffer.from(message).toString('utf8');
    let msg: Record<string, unknown>;
    try {
      const parsed = JSON.parse(text) as unknown;
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      msg = parsed as Record<string, unknown>;
    } catch {
      endConn(conn, closeCodes.policy, 'messages must be JSON objects');
      return;
    }
    if (msg.op === 'subscribe') this.subscribe(conn, msg);
    else if (msg.op === 'unsubscribe') this.unsubscribe(conn, msg);
    else endConn(conn, closeCodes.policy, `unknown op ${JSON.stringify(String(msg.op)).slice(0, 60)}`);
  }

  private refuse(conn: Conn, id: unknown, code: string, message: string, more: Record<string, unknown> = {}): void {
    this.outflow.send(conn, JSON.stringify({ type: 'error', id: typeof id === 'string' ? id : null, code, message, ...more }));
  }

  /**
   * A subscribe costs what the matching HTTP query costs (a view and its snapshot read from state), so it
   * counts as one request against the connection's caller, in the window its HTTP requests use.
   */
  private subscribe(conn: Conn, msg: Record<string, unknown>): void {
    const rate = this.o.rateLimit?.take(conn.caller);
    if (rate !== undefined && !rate.allowed) {
      const retryAfterSeconds = rate.retryAfterSeconds;
      return this.refuse(conn, msg.id, 'rate_limited', `rate limit exceeded: retry in ${retryAfterSeconds}s`, { retryAfterSeconds });
    }
    const r = subscribeRequest(msg, conn.subs, this.o.subscriptionsMax, conn.identity, this.api);
    if (!r.ok) return this.refuse(conn, r.id, r.code, r.message);
    const sub: Sub = { id: r.id, conn, view: this.views.of(r), snapshot: undefined };
    // Snapshot or replay, then live, in one synchronous step: no change can fall in between.
    conn.subs.set(r.id, sub);
    sub.view.subs.add(sub);
    this.start(sub, r.index, r.epoch);
  }

  private start(sub: Sub, index: number, epoch: string | undefined): void {
    const current = this.api.runtime.state.index;
    if (index > 0) {
      const epochMatches = epoch === undefined || epoch === this.epoch;
      const changes = epochMatches && index <= current ? this.api.runtime.changes.since(index) : undefined;
      // The live path's verdicts decide the replay (see Views.replay): what a subscriber that stayed was sent.
      const replay = changes === undefined ? undefined : this.views.replay(sub.view, changes, index, this.o.bufferedBytesHard / 2);
      if (Array.isArray(replay)) return this.resume(sub, replay, current);
      const reason = !epochMatches ? 'epoch_changed' : index > current ? 'index_ahead' : replay ?? 'index_too_old';
      this.outflow.send(sub.conn, JSON.stringify({ type: 'subscribed', id: sub.id, index: current, epoch: this.epoch, resumed: false }));
      this.outflow.send(sub.conn, JSON.stringify({ type: 'reset', id: sub.id, reason }));
      return this.snapshot(sub, current);
    }
    this.outflow.send(sub.conn, JSON.stringify({ type: 'subscribed', id: sub.id, index: current, epoch: this.epoch, resumed: false }));
    this.snapshot(sub, current);
  }

  /** Everything the client missed, as one batch at the current index (newest state of each item). */
  private resume(sub: Sub, replay: Out[], current: number): void {
    this.outflow.send(sub.conn, JSON.stringify({ type: 'subscribed', id: sub.id, index: current, epoch: this.epoch, resumed: true }));
    if (replay.length > 0) this.outflow.deliver(sub, current, replay);
  }

  /**
   * Queues the snapshot: its pages are read from state as the socket takes them, so they may carry
   * items newer than `index`; every change after `index` follows as an event (held while the snapshot
   * is written), so the view is exact once those arrive, and a resume from `index` misses nothing.
   */
  private snapshot(sub: Sub, index: number): void {
    // Closed by what was queued before it (4008): nothing more is sent.
    if (sub.conn.closed) return;
    sub.snapshot = { sub, cursor: sub.view.topic.cursor(), index };
    sub.conn.outbox.push({ job: sub.snapshot });
    this.outflow.pump(sub.conn);
  }

  private unsubscribe(conn: Conn, msg: Record<string, unknown>): void {
    const sub = typeof msg.id === 'string' ? conn.subs.get(msg.id) : undefined;
    if (sub === undefined) return this.refuse(conn, msg.id, 'unknown_subscription', `no subscription ${JSON.stringify(msg.id)} on this connection`);
    conn.subs.delete(sub.id);
    // What is dropped is the subscription's own: its held events, and its snapshot not written yet (what
    // was written of it already is the client's to discard), marked so the outbox skips it.
    const held = conn.pending.get(sub.id);
    if (held !== undefined) {
      for (const p of held.values()) conn.pendingBytes -= p.value?.length ?? 0;
      conn.pendingItems -= held.size;
      conn.pending.delete(sub.id);
    }
    if (sub.snapshot !== undefined) sub.snapshot.cursor = undefined;
    sub.snapshot = undefined;
    this.views.leave(sub);
    this.outflow.send(conn, JSON.stringify({ type: 'unsubscribed', id: sub.id }));
  }

  // ---------------------------------------------------------------- fan-out

  /** One applied entry: each view works out what changed for it once, then tells its subscribers. */
  private onChange(change: Change): void {
    if (this.views.none) return;
    for (const [view, out] of this.views.changes(change)) {
      for (const sub of view.subs) this.outflow.deliver(sub, change.index, out);
    }
  }

  private bookmarks(): void {
    const now = intervalMs();
    const index = this.api.runtime.state.index;
    for (const conn of this.conns) {
      if (conn.closed || conn.pending.size > 0 || conn.outbox.length > 0 || now - conn.lastSentMs < this.o.bookmarkIntervalMs) continue;
      this.outflow.send(conn, JSON.stringify({ type: 'bookmark', index }));
    }
  }
}
