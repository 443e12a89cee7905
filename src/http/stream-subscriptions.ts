/**
 * Subscriptions: what a `subscribe` message asks for and whether its caller may read it, and the views
 * shared by subscriptions to the same topic, key and filter — each works out once per applied entry
 * what changed for it (see stream-views.ts for what each topic tracks).
 */
import { allowed, allowedPrefix, type AccessRequest, type Identity } from '../auth/index.ts';
import type { Change } from '../runtime/index.ts';
import type { ApiContext } from './api.ts';
import type { RegistryState } from '../state/index.ts';
import type { Out, Recent, StreamSettings, Sub, View } from './stream-conn.ts';
import { fingerprint } from './stream-render.ts';
import { makeView, topicFilters, type TopicView, type ViewFilter } from './stream-views.ts';

/** A subscription asked for, or why it is refused (an error code of watch.md §4 and its message). */
export type SubscribeRequest =
  | { ok: true; id: string; topic: string; key: string; index: number; epoch: string | undefined; filter: ViewFilter; view: TopicView }
  | { ok: false; id: unknown; code: string; message: string };

const refused = (id: unknown, code: string, message: string): SubscribeRequest => ({ ok: false, id, code, message });

/** The fields a `subscribe` message has (watch.md §4.2); any other is refused. */
const subscribeFields: readonly string[] = ['op', 'id', 'topic', 'key', 'index', 'epoch', 'filter'];
/** Characters of an unknown field's name quoted back in the refusal. */
const fieldNameShownMax = 64;

/**
 * Checks a `subscribe` message against the connection's subscriptions and identity, and makes its topic view.
 * Every field must be of its type (`id`, `topic` and `key` strings, `index` a non-negative integer, `epoch` a
 * string, `filter` an object of the topic's own filters, each true or false): a field that is not is refused
 * rather than read as something else, so a client never gets a view other than the one it asked for. A field
 * the message does not have is refused too, first, as a filter the topic does not take is: a misspelt `index`
 * or `filter` (`Index`, `filters`) would be left out and the client sent a snapshot or items it did not ask for.
 */
export function subscribeRequest(msg: Record<string, unknown>, subs: ReadonlyMap<string, Sub>, subscriptionsMax: number,
  identity: Identity | undefined, api: ApiContext): SubscribeRequest {
  const { id, topic, key, index, epoch, filter } = msg;
  const unknown = Object.keys(msg).find((name) => !subscribeFields.includes(name));
  if (unknown !== undefined) {
    return refused(id, 'bad_request', `unknown field ${JSON.stringify(unknown.slice(0, fieldNameShownMax))}: a subscribe takes ${subscribeFields.join(', ')}`);
  }
  if (typeof id !== 'string' || id === '' || id.length > 128) return refused(id, 'bad_request', 'id must be a non-empty string of at most 128 characters');
  if (subs.has(id)) return refused(id, 'already_subscribed', `subscription "${id}" exists on this connection`);
  if (subs.size >= subscriptionsMax) return refused(id, 'too_many_subscriptions', `at most ${subscriptionsMax} subscriptions per connection`);
  if (typeof topic !== 'string') return refused(id, 'bad_request', 'topic must be a string');
  if (!topicFilters.has(topic)) return refused(id, 'unknown_topic', `unknown topic ${JSON.stringify(topic)}`);
  if (typeof key !== 'string') return refused(id, 'bad_key', 'key must be a string');
  if (index !== undefined && (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0)) return refused(id, 'bad_request', 'index must be a non-negative integer');
  if (epoch !== undefined && typeof epoch !== 'string') return refused(id, 'bad_request', 'epoch must be a string (the one a subscribed message carried)');
  const viewFilter = viewFilterOf(topic, filter);
  if (typeof viewFilter === 'string') return refused(id, 'bad_request', viewFilter);
  const made = makeView(topic, key, viewFilter, api);
  if ('error' in made) return refused(id, made.error, made.error === 'unknown_topic' ? `unknown topic ${JSON.stringify(topic)}` : `bad key ${JSON.stringify(key)} for topic ${topic}`);
  if (identity !== undefined && !mayWatch(identity, topic, key)) {
    return refused(id, 'forbidden', `permission denied: read on ${topic} ${JSON.stringify(key)}`);
  }
  return {
    ok: true, id, topic, key, index: typeof index === 'number' ? index : 0, epoch: typeof epoch === 'string' ? epoch : undefined,
    filter: viewFilter, view: made,
  };
}

/** The filter a subscription to a (known) topic asks for, or why it is refused: a misspelt or foreign filter would change nothing. */
function viewFilterOf(topic: string, filter: unknown): ViewFilter | string {
  if (filter === undefined) return {};
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) return 'filter must be an object';
  const takes: readonly string[] = topicFilters.get(topic) ?? [];
  for (const [name, value] of Object.entries(filter)) {
    if (!takes.includes(name)) return `filter.${name} is not a filter of ${topic} (it takes ${takes.length === 0 ? 'none' : takes.join(', ')})`;
    if (typeof value !== 'boolean') return `filter.${name} must be true or false`;
  }
  // Every field is one of the topic's filters and a boolean.
  const asked = filter as ViewFilter;
  return { passingOnly: asked.passingOnly === true, lockedOnly: asked.lockedOnly === true };
}

/**
 * The read a subscription needs, as the matching HTTP query would: a service's health or checks need
 * read on the service (every service's health: read on all of them) and, since they name their nodes,
 * on every node; its serving status read on the service (the agent's own, `""`, nothing); a node's checks read on the node and, since
 * they include its service checks, on every service (HTTP's node health filters those instead),
 * checks by state read on every node and every service (the HTTP lists filter instead); a node's
 * sessions read on that node's sessions (every node's: read on all of them, as a prefix).
 * A KV prefix needs read on the prefix and on every rule below it, since the view shows every key.
 */
function mayWatch(identity: Identity, topic: string, key: string): boolean {
  const need = (resource: AccessRequest['resource'], name: string): AccessRequest => ({ resource, name, access: 'read' });
  switch (topic) {
    // Every service (the `""` subject of service_health): read on every service rule, as a prefix.
    // Instances and their checks name their nodes: read on every node too (the HTTP lists filter by node instead).
    case 'service_health': return (key === '' ? allowedPrefix(identity, need('service', '')) : allowed(identity, need('service', key))) && allowedPrefix(identity, need('node', ''));
    case 'service_checks': return allowed(identity, need('service', key)) && allowedPrefix(identity, need('node', ''));
    // `""` is the agent's own status, which names nothing: open to every caller, as gRPC's Check and Watch of `""` are.
    case 'serving_status': return key === '' || allowed(identity, need('service', key));
    // A node's checks include the checks of its services: read on every service too.
    case 'node_checks': return allowed(identity, need('node', key)) && allowedPrefix(identity, need('service', ''));
    // Every node's checks, service checks among them: read on every node and every service, as prefixes.
    case 'checks_in_state': return allowedPrefix(identity, need('node', '')) && allowedPrefix(identity, need('service', ''));
    case 'sessions': return key === '' ? allowedPrefix(identity, need('session', '')) : allowed(identity, need('session', key));
    case 'kv_prefix': return allowedPrefix(identity, need('key', key));
    default: return false;
  }
}

/** What the views need of the stream's settings. */
type ViewSettings = Pick<StreamSettings, 'snapshotFrameBytes' | 'viewIdleMs' | 'idleViewsMax'>;

/** Items a view remembers its events about for resumes; past it the oldest go, and a resume from before them gets a reset. */
const recentItemsMax = 10_000;

/** What the live rule made of a candidate: nothing new, a changed item, or one that entered or left the view. */
type Verdict = 'same' | 'changed' | 'entered' | 'left';

/** Why a resume cannot be answered with a replay (the reason of the reset it gets instead). */
export type NoReplay = 'index_too_old' | 'replay_too_large';

/**
 * The views subscriptions read, by topic, key and filter. A view lives while it has subscribers and for
 * `viewIdleMs` after the last one left (at most `idleViewsMax` views so, the one left longest ago going
 * first), kept up to date meanwhile: a client that subscribes to it again (a resubscribe, a reconnect)
 * does not pay for the scan of state that builds it, as Consul's agent keeps a materialized view a while
 * after its last request.
 */
export class Views {
  private readonly views = new Map<string, View>();
  /** Views without subscribers, by id, with when the last one left: the one left longest ago first. */
  private readonly idle = new Map<string, number>();
  private readonly locked: LockedKeys;

  /** `floor`: the change ring's (no resume asks for an index below it, so what is older is forgotten). */
  constructor(private readonly o: ViewSettings, private readonly state: () => RegistryState, private readonly floor: () => number = () => 0) {
    this.locked = new LockedKeys(state);
  }

  /** The view of a subscription request (shared with every other subscription to the same). */
  of(r: Extract<SubscribeRequest, { ok: true }>): View {
    return this.viewFor(`${r.topic}\0${r.key}\0${r.filter.passingOnly ? 1 : 0}${r.filter.lockedOnly ? 1 : 0}`, r.view);
  }

  /** No view to keep up to date: nothing to work out for an applied entry. */
  get none(): boolean {
    return this.views.size === 0;
  }

  /** Each view's events for one applied entry (views with none are left out). */
  *changes(change: Change): Generator<[View, Out[]]> {
    this.locked.take(change);
    for (const view of this.views.values()) {
      const out: Out[] = [];
      for (const c of view.topic.candidates(change)) {
        const value = c.value();
        const verdict = this.changed(view, c.key, value);
        if (verdict === 'same') continue;
        this.remember(view, c.key, change.index, verdict);
        out.push({ op: value === undefined ? 'delete' : 'upsert', key: c.key, value });
      }
      if (out.length > 0) yield [view, out];
    }
  }

  /**
   * A resume of `view` from `index`: what a subscriber that stayed connected since was sent, as the newest
   * state of each item (`changes`: the ring's since `index`, whose candidates read the items' current JSON).
   * The live rule's verdicts are read back from what `changes` wrote down, not judged again: an item no
   * event was sent about since `index` is left out (a repeat, or another service's item), and a delete is
   * sent only for an item the client held at `index`. A view built after `index` (a subscription from an
   * HTTP list's index, or one whose view went idle and was dropped) knows nothing of what the client holds:
   * it sends what its items are now, and the deletes only when its candidates are all readable
   * (`candidatesReadable`); otherwise, or when the view forgot items past `index`, `index_too_old`.
   */
  replay(view: View, changes: readonly Change[], index: number, charsMax: number): Out[] | NoReplay {
    const known = view.since <= index;
    const out: Out[] = [];
    const seen = new Set<string>();
    let chars = 0;
    for (const change of changes) {
      for (const c of view.topic.candidates(change)) {
        if (seen.has(c.key)) continue;
        seen.add(c.key);
        const recent = view.recent.get(c.key);
        if (known && (recent === undefined || recent.at <= index)) continue;
        const value = c.value();
        if (value === undefined && (known ? !heldAt(recent!, index) : !view.topic.candidatesReadable)) {
          if (known) continue;
          return 'index_too_old';
        }
        out.push({ op: value === undefined ? 'delete' : 'upsert', key: c.key, value });
        chars += c.key.length + (value?.length ?? 0);
        if (chars > charsMax) return 'replay_too_large';
      }
    }
    // Every item an event was sent about since `index` is among the candidates, or the replay would miss it.
    if (known) for (const [key, recent] of view.recent) if (recent.at > index && !seen.has(key)) return 'index_too_old';
    return out;
  }

  private viewFor(id: string, topic: TopicView): View {
    const known = this.views.get(id);
    if (known !== undefined) {
      this.idle.delete(id);
      return known;
    }
    const view: View = {
      id, topic, fingerprints: topic.tracking === 'fingerprints' ? this.fingerprintsOf(topic) : undefined, subs: new Set(),
      since: this.state().index, recent: new Map(),
    };
    if (topic.tracking === 'locked') this.locked.join();
    this.views.set(id, view);
    return view;
  }

  /** The fingerprint of every item of a view, read page by page: only the fingerprints stay, not the items. */
  private fingerprintsOf(topic: TopicView): Map<string, string> {
    const fingerprints = new Map<string, string>();
    const cursor = topic.cursor();
    for (let page = cursor.next(this.o.snapshotFrameBytes); ; page = cursor.next(this.o.snapshotFrameBytes)) {
      for (const [key, value] of page.items) fingerprints.set(key, fingerprint(value));
      if (page.done) return fingerprints;
    }
  }

  /** The subscription ends; its view, left without one, is dropped after viewIdleMs (`nowMs`: the interval clock, performance.now()). */
  leave(sub: Sub, nowMs = performance.now()): void {
    const view = sub.view;
    view.subs.delete(sub);
    if (view.subs.size > 0) return;
    this.idle.delete(view.id);
    this.idle.set(view.id, nowMs);
    this.sweep(nowMs);
  }

  /** Drops the views idle for `viewIdleMs`, and the ones left longest ago past `idleViewsMax`. */
  sweep(nowMs: number): void {
    for (const [id, leftMs] of this.idle) {
      if (this.idle.size <= this.o.idleViewsMax && nowMs - leftMs < this.o.viewIdleMs) return;
      this.idle.delete(id);
      const view = this.views.get(id);
      this.views.delete(id);
      if (view?.topic.tracking === 'locked') this.locked.leave();
    }
  }

  /** Whether a candidate's current value is news for the view's subscribers, and how (and remembers it). */
  private changed(view: View, key: string, value: string | undefined): Verdict {
    if (view.fingerprints !== undefined) {
      const before = view.fingerprints.get(key);
      const next = value === undefined ? undefined : fingerprint(value);
      if (next === before) return 'same';
      if (next === undefined) view.fingerprints.delete(key);
      else view.fingerprints.set(key, next);
      return before === undefined ? 'entered' : next === undefined ? 'left' : 'changed';
    }
    // A key a session holds is news; one no session holds any more is a delete only when one did.
    if (view.topic.tracking === 'locked') {
      const held = this.locked.wasHeld(key);
      return value !== undefined ? (held ? 'changed' : 'entered') : held ? 'left' : 'same';
    }
    // Every KV write is news; whether it made the key (entered) is not known, so a resume takes it as held before.
    return value === undefined ? 'left' : 'changed';
  }

  /**
   * Writes down an event sent about `key` at `index`, for resumes: the record moves to the end, and records
   * no resume can ask for (at or below the ring's floor) go, as do the oldest past recentItemsMax (the view
   * then knows only what came after them).
   */
  private remember(view: View, key: string, index: number, verdict: Verdict): void {
    const floor = this.floor();
    const known = view.recent.get(key);
    view.recent.delete(key);
    let moves = known?.moves?.filter((at) => at > floor);
    if (verdict === 'entered' || verdict === 'left') (moves ??= []).push(index);
    view.recent.set(key, { at: index, moves: moves !== undefined && moves.length > 0 ? moves : undefined });
    for (const [oldest, r] of view.recent) {
      if (r.at > floor && view.recent.size <= recentItemsMax) break;
      view.recent.delete(oldest);
      if (r.at > floor) view.since = Math.max(view.since, r.at);
    }
  }
}

/** Whether the client held an item at `index` that is not in the view now: it entered or left it an odd number of times since. */
function heldAt(recent: Recent, index: number): boolean {
  let moves = 0;
  for (const at of recent.moves ?? []) if (at > index) moves++;
  return moves % 2 === 1;
}

/**
 * The keys sessions hold, as the stream last saw them: one set for every `locked` view (each shows the
 * keys under its own prefix), built from state when the first such view comes and dropped with the last,
 * so a view costs nothing per key however many views there are. A view needs it to tell the release of a
 * key it showed (a delete) from a write of a key no session held (never in the view).
 */
class LockedKeys {
  private keys: Set<string> | undefined;
  private views = 0;
  /** For each key of the entry being fanned out, whether a session held it before the entry. */
  private readonly before = new Map<string, boolean>();

  constructor(private readonly state: () => RegistryState) {}

  join(): void {
    if (this.views++ > 0) return;
    this.keys = new Set();
    for (const held of this.state().locksBySession.values()) for (const key of held) this.keys.add(key);
  }

  leave(): void {
    if (--this.views === 0) this.keys = undefined;
  }

  /** An applied entry: remembers which of its keys were held, then takes it in. */
  take(change: Change): void {
    this.before.clear();
    if (this.keys === undefined) return;
    const st = this.state();
    for (const key of change.kv) {
      this.before.set(key, this.keys.has(key));
      if (st.kvGet(key)?.session !== undefined) this.keys.add(key);
      else this.keys.delete(key);
    }
  }

  wasHeld(key: string): boolean {
    return this.before.get(key) === true;
  }
}
