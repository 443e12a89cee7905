/**
 * A browser client of `/v1/stream` (watch.md §4): one WebSocket carrying several subscriptions, each a
 * keyed view kept whole (snapshot frames are gathered and swapped in at `end_of_snapshot`, so a
 * half-received snapshot never shows). After a drop it reconnects with backoff and resumes every view
 * from its last index and the server's epoch; a `reset` starts that view afresh.
 */

/**
 * The link as the header shows it: connecting; open (connected, no subscription answered yet); live at
 * an index, with how many of the `views` subscribed the agent refused (or ended); refused (connected,
 * but every view refused: nothing will come until another token is set); denied (the agent refuses the
 * token the stream itself, `why` in its words: no retry until another token is set); retrying after a drop.
 */
export type LinkState =
  | { kind: 'connecting' }
  | { kind: 'open' }
  | { kind: 'live'; index: number; refused: number; views: number }
  | { kind: 'refused'; views: number }
  | { kind: 'denied'; why: string }
  | { kind: 'retrying'; inMs: number; why: string };

export interface Subscription {
  /** Unique on the connection; `topic:key` when not given. */
  id?: string;
  topic: string;
  key: string;
  /** The view's filter (`passingOnly`, `lockedOnly`). */
  filter?: Record<string, boolean>;
  /** Items by key after each complete change (a whole snapshot, one event, or one batch). */
  onView(items: ReadonlyMap<string, unknown>): void;
  /** The server refused or ended the subscription (`forbidden`, ...); without it the error goes to the client's handler. */
  onError?(text: string): void;
}

interface Sub extends Subscription {
  id: string;
  items: Map<string, unknown>;
  /** Snapshot frames being gathered; undefined when none is under way. */
  incoming: Map<string, unknown> | undefined;
  /** Highest index applied (0: no complete view yet, so the next subscribe asks for a snapshot). */
  index: number;
  /** The server's refusal (or end) of it on this connection; undefined while it is subscribed or asked. */
  refused: string | undefined;
}

interface Message {
  type: string;
  id?: string;
  index?: number;
  epoch?: string;
  op?: 'upsert' | 'delete';
  key?: string;
  value?: unknown;
  keys?: string[];
  items?: unknown[];
  more?: boolean;
  events?: { op: 'upsert' | 'delete'; key: string; value?: unknown }[];
  code?: string;
  message?: string;
}

const protocol = 'registry.stream.v1';
/** Reconnect backoff (watch.md §4.5): from this… */
const retryMsMin = 250;
/** …doubling up to this, with jitter; back to the minimum after a message arrives. */
const retryMsMax = 30_000;
/** Bookmarks come after 30 s of silence; nothing at all for this long means the link is dead. */
const silenceMsMax = 75_000;

export class StreamClient {
  private readonly subs = new Map<string, Sub>();
  private ws: WebSocket | undefined;
  private epoch: string | undefined;
  private retryMs = retryMsMin;
  private retryTimer: number | undefined;
  private silenceTimer: number | undefined;
  private lastIndex = 0;
  /** Whether anything has answered on this connection yet (a subscription's reply, a bookmark). */
  private answered = false;
  private stopped = false;
  /** Counts connections begun: a verdict that arrives after another began is dropped. */
  private attempt = 0;

  /**
   * `verdict` is asked once each time a connection fails to open (a browser does not show why an upgrade
   * was refused): the agent's refusal of the token, or undefined to retry as after any drop.
   */
  constructor(
    private readonly url: string,
    private readonly token: () => string,
    private readonly onState: (s: LinkState) => void,
    private readonly onError: (text: string) => void,
    private readonly verdict?: () => Promise<string | undefined>,
  ) {}

  add(sub: Subscription): void {
    const id = sub.id ?? `${sub.topic}:${sub.key}`;
    const entry: Sub = { ...sub, id, items: new Map(), incoming: undefined, index: 0, refused: undefined };
    this.subs.set(id, entry);
    if (this.ws?.readyState === WebSocket.OPEN) this.subscribe(entry);
  }

  /** Ends a subscription (the server answers `unsubscribed`); messages still in flight for it are dropped. */
  remove(id: string): void {
    const sub = this.subs.get(id);
    if (sub === undefined) return;
    this.subs.delete(id);
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ op: 'unsubscribe', id }));
    this.report();
  }

  start(): void {
    this.stopped = false;
    this.connect();
  }

  /** Drops the connection and connects again at once (a new token), resuming every view. */
  restart(): void {
    this.retryMs = retryMsMin;
    this.close();
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    this.close();
  }

  private close(): void {
    this.attempt += 1;
    window.clearTimeout(this.retryTimer);
    window.clearTimeout(this.silenceTimer);
    const ws = this.ws;
    this.ws = undefined;
    if (ws !== undefined) {
      ws.onclose = null;
      ws.onmessage = null;
      ws.close(1000);
    }
  }

  private connect(): void {
    this.onState({ kind: 'connecting' });
    const token = this.token();
    // Browsers cannot set headers on a WebSocket: the token rides in a second subprotocol (watch.md §4.1).
    const protocols = token === '' ? [protocol] : [protocol, `bearer.${base64url(token)}`];
    const ws = new WebSocket(this.url, protocols);
    this.ws = ws;
    this.answered = false;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      this.heard();
      this.onState({ kind: 'open' });
      for (const sub of this.subs.values()) this.subscribe(sub);
    };
    ws.onmessage = (ev) => {
      this.heard();
      this.retryMs = retryMsMin;
      this.receive(parseMessage(String(ev.data)));
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      if (opened || this.verdict === undefined) return this.retry(closeReason(ev));
      this.askVerdict(closeReason(ev));
    };
  }

  /** A connection that never opened: the agent says whether it refuses the token; if not, retry as usual. */
  private askVerdict(why: string): void {
    const attempt = ++this.attempt;
    window.clearTimeout(this.silenceTimer);
    this.verdict!().then((refusal) => refusal, () => undefined).then((refusal) => {
      if (attempt !== this.attempt || this.stopped) return;
      if (refusal === undefined) return this.retry(why);
      // Nothing will change until another token is set (restart): no retry.
      this.onState({ kind: 'denied', why: refusal });
    });
  }

  private retry(why: string): void {
    window.clearTimeout(this.silenceTimer);
    if (this.stopped) return;
    const inMs = Math.round(this.retryMs * (0.5 + Math.random() / 2));
    this.retryMs = Math.min(retryMsMax, this.retryMs * 2);
    this.onState({ kind: 'retrying', inMs, why });
    this.retryTimer = window.setTimeout(() => this.connect(), inMs);
  }

  private heard(): void {
    window.clearTimeout(this.silenceTimer);
    this.silenceTimer = window.setTimeout(() => {
      const ws = this.ws;
      this.close();
      if (ws !== undefined) this.retry('no message for 75 s');
    }, silenceMsMax);
  }

  private subscribe(sub: Sub): void {
    sub.incoming = undefined;
    sub.refused = undefined;
    const resume = sub.index > 0 && this.epoch !== undefined ? { index: sub.index, epoch: this.epoch } : {};
    const filter = sub.filter === undefined ? {} : { filter: sub.filter };
    this.ws?.send(JSON.stringify({ op: 'subscribe', id: sub.id, topic: sub.topic, key: sub.key, ...filter, ...resume }));
  }

  private receive(m: Message): void {
    if (m.type === 'bookmark') return this.advance(m.index ?? 0);
    const sub = m.id === undefined ? undefined : this.subs.get(m.id);
    if (sub === undefined) {
      if (m.type === 'error') this.onError(`${m.code ?? 'error'}: ${m.message ?? ''}`);
      return;
    }
    switch (m.type) {
      case 'subscribed':
        this.epoch = m.epoch;
        sub.refused = undefined;
        // Resumed: the view stays and the missed changes follow as one batch; else a snapshot follows.
        return this.advance(m.index ?? 0);
      case 'reset':
        sub.incoming = undefined;
        return;
      case 'snapshot':
        sub.incoming ??= new Map();
        (m.keys ?? []).forEach((k, i) => sub.incoming!.set(k, m.items?.[i]));
        return;
      case 'end_of_snapshot':
        sub.items = sub.incoming ?? new Map();
        sub.incoming = undefined;
        return this.applied(sub, m.index ?? 0);
      case 'event':
        apply(sub.items, m.op, m.key, m.value);
        return this.applied(sub, m.index ?? 0);
      case 'batch':
        for (const e of m.events ?? []) apply(sub.items, e.op, e.key, e.value);
        return this.applied(sub, m.index ?? 0);
      case 'error': {
        const text = `${sub.topic} ${JSON.stringify(sub.key)}: ${m.code ?? 'error'} ${m.message ?? ''}`;
        sub.refused = text;
        this.answered = true;
        this.report();
        if (sub.onError !== undefined) sub.onError(text);
        else this.onError(text);
        return;
      }
      default:
        return;
    }
  }

  private applied(sub: Sub, index: number): void {
    sub.index = Math.max(sub.index, index);
    this.advance(index);
    sub.onView(sub.items);
  }

  private advance(index: number): void {
    this.lastIndex = Math.max(this.lastIndex, index);
    this.answered = true;
    this.report();
  }

  /** The link's state from the subscriptions' on an open connection that has answered. */
  private report(): void {
    if (this.ws?.readyState !== WebSocket.OPEN || !this.answered) return;
    const views = this.subs.size;
    let refused = 0;
    for (const sub of this.subs.values()) if (sub.refused !== undefined) refused += 1;
    // A bookmark moves the index of a connection all of whose views are refused: it stays refused.
    if (views > 0 && refused === views) return this.onState({ kind: 'refused', views });
    this.onState({ kind: 'live', index: this.lastIndex, refused, views });
  }
}

function apply(items: Map<string, unknown>, op: string | undefined, key: string | undefined, value: unknown): void {
  if (key === undefined) return;
  if (op === 'delete') items.delete(key);
  else items.set(key, value);
}

/**
 * A message as JSON, with KV Flags kept as their exact digits (a string): a uint64 past 2^53 would be
 * rounded as a number. Only an unescaped `"Flags":` member matches: in a key, output or note the quotes
 * are escaped, and values are base64.
 */
function parseMessage(text: string): Message {
  return JSON.parse(text.replace(/"Flags":(\d+)/g, '"Flags":"$1"')) as Message;
}

function base64url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** What a close means to the user (watch.md §4.7); a refused upgrade (401, 429) shows as 1006. */
function closeReason(ev: CloseEvent): string {
  switch (ev.code) {
    case 1001: return 'server shutting down';
    case 4001: return 'token expired';
    case 4008: return 'too slow a reader';
    case 1006: return 'connection lost or refused';
    default: return ev.reason !== '' ? ev.reason : `closed (${ev.code})`;
  }
}
