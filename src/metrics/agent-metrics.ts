/**
 * The agent's metrics: one prom-client Registry per agent (never the global one) holding the request,
 * log and apply instruments that the runtime, the log and the HTTP server feed through the observer
 * ports, the lock, session and check series (registry-events.ts), and gauges of state that are read
 * only when someone scrapes (prom-client `collect`), so they cost nothing on the hot paths. prom-client's
 * default collectors measure the process, so they live in one registry per process, merged into each
 * answer. Both answers of /v1/agent/metrics are made from the same registries.
 */
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { CheckKind, CheckStatus } from '../domain/types.ts';
import type { RefusalReason } from '../grpc/listener.ts';
import type { Member, MemberStatus } from '../ports/membership.ts';
import type { AppliedView, HttpObserver, LogObserver, ObservedEntry, RuntimeObserver } from '../ports/observer.ts';
import { stateBytes, type RegistryState } from '../state/index.ts';
import { consulMetrics, type ConsulMetrics } from './consul-json.ts';
import { addConsulNames } from './consul-names.ts';
import { CounterFamily, HistogramFamily, type CounterChild, type HistogramChild } from './instruments.ts';
import { checkStatuses, RegistryEvents } from './registry-events.ts';

/** Bucket bounds of every duration histogram, in seconds: 100 µs (an apply) up to 10 min (the longest blocking query). */
export const secondsBuckets: readonly number[] = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
];

/** Bucket bounds of lock holding times, in seconds: 1 ms up to a day. */
export const holdBuckets: readonly number[] = [0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 4 * 3600, 12 * 3600, 86_400];

/** Bucket bounds of the batch-size histograms, in entries: powers of two up to the largest append a log queues (65536). */
export const entriesBuckets: readonly number[] = Array.from({ length: 17 }, (_, k) => 2 ** k);

/** Where scrape-time gauges read from; given once the agent's parts are up (before that the gauges stay empty). */
export interface MetricsSources {
  state(): RegistryState;
  /** Proposals waiting for their entry to apply. */
  writesInFlight(): number;
  members(): readonly Member[];
  /** Open /v1/stream WebSocket connections, and subscriptions over all of them. */
  streamConnections(): number;
  streamSubscriptions(): number;
  /** Open gRPC Health/Watch calls. */
  grpcWatchers(): number;
  /** Open connections of the gRPC port. */
  grpcConnections(): number;
  /** This agent's probes running, and waiting for a slot (limits.check_probes_max). */
  checkProbes(): { running: number; waiting: number };
  /** Acquires waiting in this node's lock queues. */
  lockQueueDepth(): number;
  /** Callers whose rate-limit window is running (0 without rate_limit). */
  rateLimitCallers(): number;
  /** Index of the last entry of the log as this node knows it (a JetStream log: the stream's last sequence). */
  logLastIndex(): number;
}

export type LogKind = 'wal' | 'jetstream';

let processRegistry: Registry | undefined;

/**
 * prom-client's default collectors (process_*, nodejs_*), made once per process: they observe the whole
 * process (a GC observer, an event-loop delay monitor that is never switched off), so agents sharing a
 * process (the in-process tests) share them rather than each adding its own.
 */
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** Methods counted by name; anything else a client sends is counted as OTHER (bounded label values). */
const methods = ['GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS', 'OTHER'] as const;

function methodSlot(method: string): number {
  switch (method) {
    case 'GET': return 0;
    case 'HEAD': return 1;
    case 'PUT': return 2;
    case 'POST': return 3;
    case 'DELETE': return 4;
    case 'PATCH': return 5;
    case 'OPTIONS': return 6;
    default: return 7;
  }
}

/** One route's children, so that a request costs one map lookup by its (interned) pattern. */
interface RouteChildren {
  route: string;
  /** Service-time histograms by method slot, made on first use. */
  durations: (HistogramChild | undefined)[];
  /** Request counters by status × method slot. */
  counts: Map<number, CounterChild>;
}

const memberStatuses: readonly MemberStatus[] = ['alive', 'failed', 'left'];

export class AgentMetrics implements HttpObserver, RuntimeObserver {
  readonly registry = new Registry();
  private readonly processRegistry = processMetrics();
  private readonly startedMs = performance.now();
  private sources: MetricsSources | undefined;

  private readonly requests = this.counter('roster_http_requests_total', 'HTTP requests answered, by method, route pattern and status.', ['method', 'route', 'status']);
  private readonly requestSeconds = this.histogram('roster_http_request_duration_seconds',
    'Service time of a request: from its arrival to its answer, less any wait in a lock queue; by method and route pattern.', ['method', 'route'], secondsBuckets);
  private readonly appendSeconds = this.histogram('roster_log_append_duration_seconds', 'Time from proposing to the log acknowledging the append (queueing for a group commit included).', [], secondsBuckets).child();
  private readonly commitSeconds = this.histogram('roster_log_commit_duration_seconds', 'Time of one group commit of this node: WAL write and fdatasync, or JetStream publish until its PubAck.', ['log'], secondsBuckets);
  private readonly commitEntries = this.histogram('roster_log_commit_entries', 'Entries per group commit of this node.', ['log'], entriesBuckets);
  private readonly applySeconds = this.histogram('roster_apply_duration_seconds', 'Time to apply one batch of committed entries, effects included.', [], secondsBuckets).child();
  private readonly applyEntries = this.histogram('roster_apply_batch_entries', 'Committed entries per applied batch.', [], entriesBuckets).child();
  private readonly routes = new Map<string, RouteChildren>();
  private readonly grpcRefused = this.counter('roster_grpc_connections_refused_total',
    'Connections the gRPC port closed unserved, by reason (agent-limit, client-limit, handshake-timeout, not-http2).', ['reason']);
  private readonly events = new RegistryEvents({
    acquires: this.counter('roster_lock_acquires_total', 'Locks acquired (acquires that got the lock), counted on the node that proposed them.', []),
    acquireFailures: this.counter('roster_lock_acquire_failures_total', 'Acquires refused, by reason (held-by-other, lock-delay, invalid-session); each try of a queued acquire counts.', ['reason']),
    handoffSeconds: this.histogram('roster_lock_handoff_seconds', 'Time from the release of a contended lock to its next holder\'s acquire, on the new holder\'s node.', [], secondsBuckets),
    holdSeconds: this.histogram('roster_lock_hold_seconds', 'Time a lock was held, from its acquire to its release (or the key\'s deletion), on the acquirer\'s node.', [], holdBuckets),
    queueWaitSeconds: this.histogram('roster_lock_queue_wait_seconds', 'Time a queued acquire (?acquire=&wait=) waited in its key\'s queue, by result (acquired, not-acquired).', ['result'], secondsBuckets),
    invalidations: this.counter('roster_session_invalidations_total', 'Sessions invalidated, by cause (ttl, destroy, check, node, other), on the node that proposed it.', ['cause']),
    ttlInvalidateSeconds: this.histogram('roster_session_ttl_invalidate_seconds', 'Time from a TTL expiry\'s entry being stamped to its apply, for the expiries that invalidated a session.', [], secondsBuckets),
    checkRuns: this.counter('roster_check_runs_total', 'Runs of this agent\'s checks by kind and result: probes, TTL reports and lapses, alias updates.', ['kind', 'status']),
    checkRunSeconds: this.histogram('roster_check_run_duration_seconds', 'Time one probe of this agent\'s checks took, by kind.', ['kind'], secondsBuckets),
    checkTransitions: this.counter('roster_check_transitions_total', 'Checks that changed status, by kind and new status, on the node that proposed the change.', ['kind', 'status']),
    applyLagSeconds: this.histogram('roster_apply_lag_seconds', 'Time from an entry being stamped (before its commit) to its apply on this node.', [], secondsBuckets),
  });

  constructor() {
    this.gauge('roster_registry_index', 'The registry index: the last log entry applied on this node.', (s) => s.state().index);
    this.gauge('roster_kv_keys', 'Keys in the KV store.', (s) => s.state().kv.size);
    this.gauge('roster_state_bytes', 'The state\'s estimated size in bytes, as limits.state_bytes_max counts it.', (s) => stateBytes(s.state()));
    this.gauge('roster_sessions', 'Sessions in the registry (all nodes\').', (s) => s.state().sessions.size);
    this.gauge('roster_locks_held', 'KV keys held by a session (locks).', (s) => locksHeld(s.state()));
    this.gauge('roster_writes_in_flight', 'Proposals of this node waiting for their entry to apply.', (s) => s.writesInFlight());
    this.gauge('roster_stream_connections', 'Open /v1/stream WebSocket connections.', (s) => s.streamConnections());
    this.gauge('roster_stream_subscriptions', 'Subscriptions over all open /v1/stream connections.', (s) => s.streamSubscriptions());
    this.gauge('roster_grpc_watchers', 'Open gRPC Health/Watch calls.', (s) => s.grpcWatchers());
    this.gauge('roster_grpc_connections', 'Open connections of the gRPC port (admitted, or sending their HTTP/2 preface).', (s) => s.grpcConnections());
    this.gauge('roster_check_probes_running', 'Probes of this agent\'s checks running now (at most limits.check_probes_max).', (s) => s.checkProbes().running);
    this.gauge('roster_check_probes_waiting', 'Probes of this agent\'s checks waiting for a slot under limits.check_probes_max.', (s) => s.checkProbes().waiting);
    this.gauge('roster_lock_queue_depth', 'Queued acquires waiting in this node\'s lock queues.', (s) => s.lockQueueDepth());
    this.gauge('roster_rate_limit_callers', 'Callers whose rate_limit window is running (0 without rate_limit).', (s) => s.rateLimitCallers());
    this.gauge('roster_apply_lag_entries', 'Entries of the log this node has not applied yet.', (s) => Math.max(0, s.logLastIndex() - s.state().index));
    this.labelledGauge('roster_checks', 'Health checks in the registry, by status.', 'status', checkStatuses, (s) => countBy(s.state().checks.values(), (c) => c.status));
    this.labelledGauge('roster_gossip_members', 'Cluster members as this node\'s gossip sees them, by status (a single node: itself, alive).', 'status', memberStatuses,
      (s) => countBy(s.members(), (m) => m.status));
  }

  /** The agent's parts the gauges read at scrape time. */
  track(sources: MetricsSources): void {
    this.sources = sources;
    this.events.begin(sources.state());
  }

  /** The observer a log reports its commits to. */
  logObserver(log: LogKind): LogObserver {
    const seconds = this.commitSeconds.child(log);
    const entries = this.commitEntries.child(log);
    return {
      committed(n: number, s: number): void {
        seconds.observe(s);
        entries.observe(n);
      },
    };
  }

  request(method: string, route: string, status: number, seconds: number, queuedSeconds = 0): void {
    const r = this.routes.get(route) ?? this.addRoute(route);
    const m = methodSlot(method);
    (r.durations[m] ?? this.addDuration(r, m)).observe(seconds - queuedSeconds);
    const slot = status * methods.length + m;
    (r.counts.get(slot) ?? this.addCount(r, slot)).inc();
  }

  /** A connection the gRPC port closed unserved. */
  grpcConnectionRefused(reason: RefusalReason): void {
    this.grpcRefused.child(reason).inc();
  }

  appended(seconds: number): void {
    this.appendSeconds.observe(seconds);
  }

  applied(entries: number, seconds: number): void {
    this.applySeconds.observe(seconds);
    this.applyEntries.observe(entries);
    this.events.batchApplied();
  }

  /** Entries applied before `track` (the start's replay) are not events of this run: they are skipped. */
  entryApplied(entry: ObservedEntry, applied: AppliedView, local: boolean): void {
    if (this.sources !== undefined) this.events.entryApplied(this.sources.state(), entry, applied, local);
  }

  lockQueued(seconds: number, acquired: boolean): void {
    this.events.lockQueued(seconds, acquired);
  }

  checkRan(kind: CheckKind, status: CheckStatus, seconds: number): void {
    this.events.checkRan(kind, status, seconds);
  }

  /** Prometheus text exposition format 0.0.4, with its content type. */
  async prometheus(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.answered().metrics() };
  }

  /** Consul's /v1/agent/metrics shape: Timestamp, Gauges, Points, Counters, Samples; Consul's names added where Roster has an equivalent. */
  async consul(): Promise<ConsulMetrics> {
    const uptimeSeconds = (performance.now() - this.startedMs) / 1000;
    const out = await consulMetrics(this.answered(), Date.now(), uptimeSeconds);
    addConsulNames(out, uptimeSeconds);
    return out;
  }

  // ---------------------------------------------------------------- construction

  /** The agent's series, then the process's: a registry made per scrape (it only lists the metric objects). */
  private answered(): Registry {
    return Registry.merge([this.registry, this.processRegistry]);
  }

  private addRoute(route: string): RouteChildren {
    const r: RouteChildren = { route, durations: methods.map(() => undefined), counts: new Map<number, CounterChild>() };
    this.routes.set(route, r);
    return r;
  }

  private addDuration(r: RouteChildren, slot: number): HistogramChild {
    const child = this.requestSeconds.child(methods[slot]!, r.route);
    r.durations[slot] = child;
    return child;
  }

  private addCount(r: RouteChildren, slot: number): CounterChild {
    const status = Math.floor(slot / methods.length);
    const child = this.requests.child(methods[slot % methods.length]!, r.route, String(status));
    r.counts.set(slot, child);
    return child;
  }

  private counter(name: string, help: string, labelNames: string[]): CounterFamily {
    const family = new CounterFamily(name, help, labelNames);
    this.register(family);
    return family;
  }

  private histogram(name: string, help: string, labelNames: string[], bounds: readonly number[]): HistogramFamily {
    const family = new HistogramFamily(name, help, labelNames, bounds);
    this.register(family);
    return family;
  }

  /**
   * prom-client's Registry formats any object with its metric shape (name, help, type, get, reset); its
   * typings list only its own classes, hence the cast. The version is pinned, and the metrics test
   * parses the output with the Prometheus project's own parser.
   */
  private register(family: CounterFamily | HistogramFamily): void {
    this.registry.registerMetric(family as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  private gauge(name: string, help: string, read: (s: MetricsSources) => number): void {
    const metrics = this;
    new Gauge({
      name, help, registers: [this.registry],
      collect() {
        if (metrics.sources !== undefined) this.set(read(metrics.sources));
      },
    });
  }

  /** A gauge with one label whose every value is always written (0 included), so a series never just vanishes. */
  private labelledGauge<V extends string>(name: string, help: string, label: string, values: readonly V[], read: (s: MetricsSources) => Map<string, number>): void {
    const metrics = this;
    new Gauge({
      name, help, labelNames: [label], registers: [this.registry],
      collect() {
        if (metrics.sources === undefined) return;
        const counts = read(metrics.sources);
        for (const v of values) this.set({ [label]: v }, counts.get(v) ?? 0);
      },
    });
  }
}

/** Keys held by sessions: the lock sets of the sessions (one per session, so O(sessions), not O(keys)). */
function locksHeld(state: RegistryState): number {
  let n = 0;
  for (const keys of state.locksBySession.values()) n += keys.size;
  return n;
}

function countBy<T>(items: Iterable<T>, key: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) {
    const k = key(item);
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return counts;
}
