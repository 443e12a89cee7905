/**
 * What a connection's socket is sent, within budgets: messages in order behind anything waiting,
 * snapshot pages read from state only while the socket is below the soft limit and the agent's snapshot
 * pages in flight are within their budget, live events held and coalesced for a slow reader and flushed
 * as one batch per subscription on drain, and 4008 for a connection whose queued bytes pass the hard limit.
 *
 * Nothing is written inside uWS's drain callback: a write there that leaves bytes buffered for a socket
 * that had drained completely is not written out until the next write to that socket (measured with this
 * uWS build: no writable event follows), so a reader's flushed batch would wait for the next bookmark.
 * The callback only marks the connection; the writes follow in a setImmediate.
 */
import { intervalMs } from '../ports/clock.ts';
import { closeCodes, closeDrainWaitMsMax, endConn, type Conn, type Out, type SnapshotJob, type StreamSettings, type Sub } from './stream-conn.ts';
import type { SnapshotCursor } from './stream-views.ts';
import { render, renderBatch } from './stream-render.ts';

export class Outflow {
  /** Snapshot bytes in flight over all connections (the sum of their upper bounds). */
  private snapshotInFlight = 0;
  /** Connections whose snapshot waits for the agent's snapshot budget. */
  private readonly waiting = new Set<Conn>();
  /** Connections whose socket drained since the last setImmediate ran (see the file comment). */
  private readonly drained = new Set<Conn>();
  /**
   * Connections closed with 4008 whose close frame waits for their socket to drain (see slowConsumer),
   * oldest first; already released, so no longer counted as connections. At most connectionsMax: past it the
   * oldest is ended at once.
   */
  private readonly closing = new Set<Conn>();

  /** `release` drops a connection's subscriptions, held events, queue and slot (its close, without the socket's). */
  constructor(private readonly o: StreamSettings, private readonly conns: ReadonlySet<Conn>, private readonly release: (conn: Conn) => void) {}

  /** A closed connection: what uWS still buffers for it goes with the socket, and its budget is freed. */
  closed(conn: Conn): void {
    this.waiting.delete(conn);
    this.drained.delete(conn);
    this.closing.delete(conn);
    this.snapshotInFlight -= conn.snapshotInFlight;
    conn.snapshotInFlight = 0;
    this.wakeWaiting();
  }

  deliver(sub: Sub, index: number, events: Out[]): void {
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
    let held = conn.pending.get(subId);
    if (held === undefined) conn.pending.set(subId, (held = new Map()));
    for (const e of events) {
      const before = held.get(e.key);
      if (before === undefined) conn.pendingItems += 1;
      else conn.pendingBytes -= before.value?.length ?? 0;
      held.set(e.key, { key: e.key, value: e.value, index });
      conn.pendingBytes += e.value?.length ?? 0;
    }
    if (conn.pendingItems > this.o.pendingItemsMax) this.slowConsumer(conn);
    else this.overBudget(conn);
  }

  /**
   * A connection's queued bytes: what uWS buffers for it beyond its snapshot pages in flight (those are
   * the agent's snapshot budget), its held events and its queued messages. Past the hard limit it is
   * closed with 4008; true then.
   */
  overBudget(conn: Conn): boolean {
    if (conn.closed) return true;
    this.observe(conn);
    const queued = conn.ws.getBufferedAmount() - conn.snapshotInFlight + conn.pendingBytes + conn.outboxBytes;
    if (queued <= this.o.bufferedBytesHard) return false;
    this.slowConsumer(conn);
    return true;
  }

  /**
   * Closes a slow reader with 4008, releasing the connection at once: what it was still to be sent is
   * dropped (it resumes from its last index). uWS's end() queues the close frame behind what it buffers
   * and gives the socket its ping timeout (16 s) to take it all, then cuts it (1006), so a reader paused a
   * little longer would never see the 4008: end() is called once the socket has drained (on drain, or by
   * the sweep), or after closeDrainWaitMsMax when it never does.
   */
  private slowConsumer(conn: Conn): void {
    if (conn.closed) return;
    conn.closed = true;
    conn.closing = { code: closeCodes.slowConsumer, reason: 'slow consumer', sinceMs: intervalMs() };
    this.release(conn);
    this.closing.add(conn);
    if (this.closing.size > this.o.connectionsMax) this.endClosing(this.closing.values().next().value!);
    this.endDrained(conn, intervalMs());
  }

  /** A waiting close is ended once nothing is buffered for its socket, or once it waited long enough. */
  private endDrained(conn: Conn, now: number): void {
    const closing = conn.closing;
    if (closing === undefined) return;
    if (conn.ws.getBufferedAmount() > 0 && now - closing.sinceMs < closeDrainWaitMsMax) return;
    this.endClosing(conn);
  }

  /** Sends a waiting close's frame (behind whatever uWS still buffers for the socket). */
  private endClosing(conn: Conn): void {
    const closing = conn.closing!;
    this.closing.delete(conn);
    endConn(conn, closing.code, closing.reason);
  }

  /** The timer's pass over the closes waiting for their socket to drain. */
  sweepClosing(now: number): void {
    for (const conn of [...this.closing]) this.endDrained(conn, now);
  }

  /** Shutdown: the closes waiting for their socket to drain are ended now. */
  endAllClosing(): void {
    for (const conn of [...this.closing]) this.endClosing(conn);
  }

  /** Lowers a connection's snapshot bytes in flight to what uWS can still be holding of them. */
  observe(conn: Conn): void {
    const buffered = conn.ws.getBufferedAmount();
    if (conn.snapshotInFlight <= buffered) return;
    this.snapshotInFlight -= conn.snapshotInFlight - buffered;
    conn.snapshotInFlight = buffered;
  }

  /** uWS's drain callback: the socket's writes follow in a setImmediate (see the file comment). */
  drain(conn: Conn | undefined): void {
    if (conn === undefined || (conn.closed && conn.closing === undefined)) return;
    if (this.drained.size === 0) setImmediate(() => this.afterDrain());
    this.drained.add(conn);
  }

  /** Sockets that drained: a waiting close is ended, else ordered messages and snapshot pages go first, then the held events. */
  private afterDrain(): void {
    const drained = [...this.drained];
    this.drained.clear();
    for (const conn of drained) {
      if (conn.closing !== undefined) this.endDrained(conn, intervalMs());
      else this.pump(conn);
    }
    this.wakeWaiting();
  }

  /** Snapshots that waited for the agent's budget try again (budget freed by a drain or a close). */
  wakeWaiting(): void {
    if (this.waiting.size === 0) return;
    for (const conn of this.conns) this.observe(conn);
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const conn of waiting) this.pump(conn);
  }

  /**
   * Writes what waits for the socket while it is below the soft limit: messages in order, snapshot pages
   * read as they go (while the agent's snapshot budget allows, or when this connection has none in
   * flight); once nothing waits, the held events as one batch per subscription.
   */
  pump(conn: Conn): void {
    if (conn.closed) return;
    this.observe(conn);
    conn.ws.cork(() => {
      while (conn.outbox.length > 0 && !conn.closed && conn.ws.getBufferedAmount() <= this.o.bufferedBytesSoft) {
        const task = conn.outbox.peek()!;
        if ('text' in task) {
          conn.outbox.shift();
          conn.outboxBytes -= task.text.length;
          this.write(conn, task.text);
          continue;
        }
        // The snapshot of a subscription dropped meanwhile: nothing more of it is sent.
        if (task.job.cursor === undefined) {
          conn.outbox.shift();
          continue;
        }
        // A page the kernel took at once is no longer in flight here.
        this.observe(conn);
        if (this.snapshotInFlight >= this.o.snapshotBytesMax && conn.snapshotInFlight > 0) {
          this.waiting.add(conn);
          return;
        }
        this.page(conn, task.job, task.job.cursor);
      }
      if (conn.closed || conn.outbox.length > 0 || conn.pending.size === 0) return;
      if (conn.ws.getBufferedAmount() > this.o.bufferedBytesSoft) return;
      this.flushHeld(conn);
    });
  }

  /** One snapshot frame; the last one (`more: false`) is followed by `end_of_snapshot`. */
  private page(conn: Conn, job: SnapshotJob, cursor: SnapshotCursor): void {
    const { items, done } = cursor.next(this.o.snapshotFrameBytes);
    const keys = items.map(([k]) => JSON.stringify(k)).join(',');
    const values = items.map(([, v]) => v).join(',');
    const text = `{"type":"snapshot","id":${JSON.stringify(job.sub.id)},"index":${job.index},"keys":[${keys}],"items":[${values}],"more":${!done}}`;
    conn.snapshotInFlight += text.length;
    this.snapshotInFlight += text.length;
    this.write(conn, text);
    if (!done) return;
    conn.outbox.shift();
    job.cursor = undefined;
    job.sub.snapshot = undefined;
    this.write(conn, JSON.stringify({ type: 'end_of_snapshot', id: job.sub.id, index: job.index }));
  }

  /** The held events, one batch per subscription stamped with the newest index among its events. */
  private flushHeld(conn: Conn): void {
    const held = [...conn.pending];
    conn.pending.clear();
    conn.pendingItems = 0;
    conn.pendingBytes = 0;
    for (const [subId, events] of held) {
      let index = 0;
      const out: Out[] = [];
      for (const p of events.values()) {
        index = Math.max(index, p.index);
        out.push({ op: p.value === undefined ? 'delete' : 'upsert', key: p.key, value: p.value });
      }
      this.write(conn, renderBatch(subId, index, out));
    }
  }

  /**
   * Sends a message that must keep its place (control messages): behind anything already waiting, and
   * queued while the socket is backed up, within the connection's budget.
   */
  send(conn: Conn, text: string): void {
    if (conn.closed) return;
    if (conn.outbox.length > 0 || conn.ws.getBufferedAmount() > this.o.bufferedBytesSoft) {
      conn.outbox.push({ text });
      conn.outboxBytes += text.length;
      this.overBudget(conn);
      return;
    }
    this.write(conn, text);
  }

  /** Writes one message; a dropped one (2) would break the delta stream, so the connection is ended. */
  private write(conn: Conn, text: string): void {
    if (conn.closed) return;
    conn.lastSentMs = intervalMs();
    if (conn.ws.send(text, false) === 2) this.slowConsumer(conn);
  }
}
