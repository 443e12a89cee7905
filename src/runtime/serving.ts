/**
 * Serving status of each registered service name, as the gRPC health service and the `serving_status`
 * stream topic report it (watch.md §1.6): SERVING when at least one instance is healthy — its own
 * checks and its node's checks have no critical (warning counts as healthy) — NOT_SERVING when
 * instances exist but none is healthy, and no entry when no instance is registered. `""` is the Roster
 * process itself: SERVING while it runs and can store writes, NOT_SERVING while its log cannot (a full
 * disk) and once it shuts down.
 */
import type { Effect, RegistryState } from '../state/index.ts';

export type ServingStatus = 'SERVING' | 'NOT_SERVING';
/** undefined: the name is not registered (Check: NOT_FOUND; Watch: SERVICE_UNKNOWN). */
export type ServingListener = (name: string, status: ServingStatus | undefined) => void;

/** The catalog changes a batch of entries made, as their effects tell them (`service`, `check`, `node`). */
export type CatalogEffect = Extract<Effect, { t: 'service' | 'check' | 'node' }>;

/** Computes every service name's status from state. */
export function computeServingStatuses(state: RegistryState): Map<string, ServingStatus> {
  const out = new Map<string, ServingStatus>();
  const nodeCritical = new Map<string, boolean>();
  const nodeIsCritical = (node: string) => {
    let v = nodeCritical.get(node);
    if (v === undefined) {
      v = state.checksOfNode(node).some((c) => c.serviceId === '' && c.status === 'critical');
      nodeCritical.set(node, v);
    }
    return v;
  };
  const criticalServices = new Set<string>();
  for (const c of state.checks.values()) if (c.serviceId !== '' && c.status === 'critical') criticalServices.add(state.serviceKey(c.node, c.serviceId));
  for (const s of state.services.values()) {
    const healthy = !nodeIsCritical(s.node) && !criticalServices.has(state.serviceKey(s.node, s.id));
    if (healthy) out.set(s.service, 'SERVING');
    else if (!out.has(s.service)) out.set(s.service, 'NOT_SERVING');
  }
  return out;
}

/** Keeps the current statuses and tells listeners about each name whose status actually changed. */
export class ServingTracker {
  private current = new Map<string, ServingStatus>();
  /** The service name of each instance, by node then service ID, as the statuses were last computed. */
  private names = new Map<string, Map<string, string>>();
  private processStatus: ServingStatus = 'NOT_SERVING';
  private frozen = false;
  private started = false;
  /** False while the log cannot store writes (a full disk): the process reads NOT_SERVING meanwhile. */
  private writable = true;
  private readonly listeners = new Set<ServingListener>();

  /** Status of a name ("" = this process), or undefined when no instance is registered. */
  get(name: string): ServingStatus | undefined {
    if (name === '') return this.processStatus;
    if (this.frozen) return this.current.has(name) ? 'NOT_SERVING' : undefined;
    return this.current.get(name);
  }

  /** Every known name with its status, "" first. */
  list(): [string, ServingStatus][] {
    return [['', this.processStatus], ...[...this.current.keys()].sort().map((n) => [n, this.get(n)!] as [string, ServingStatus])];
  }

  subscribe(listener: ServingListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Recomputes from state after a batch that touched the catalog and reports the differences: with the
   * batch's catalog effects, only the names they can have changed (the instances named, every instance of
   * a node named, and the names those instances had before); without, every name.
   */
  update(state: RegistryState, effects?: Iterable<CatalogEffect>): void {
    if (this.frozen) return;
    if (effects === undefined) return this.recomputeAll(state);
    const names = new Set<string>();
    const instance = (node: string, serviceId: string) => {
      const ofNode = this.names.get(node);
      const before = ofNode?.get(serviceId);
      if (before !== undefined) names.add(before);
      const now = state.services.get(state.serviceKey(node, serviceId))?.service;
      if (now !== undefined) names.add(now);
      this.remember(node, serviceId, now);
    };
    for (const e of effects) {
      if (e.t === 'check' && e.serviceId !== '') instance(e.node, e.serviceId);
      else if (e.t === 'service') instance(e.node, e.serviceId);
      else {
        // A node's own check, or the node itself: every instance on it, now and before.
        const ids = new Set([...this.names.get(e.node)?.keys() ?? [], ...state.servicesOfNode(e.node).map((x) => x.id)]);
        for (const id of ids) instance(e.node, id);
      }
    }
    for (const name of names) {
      const status = servingOf(state, name);
      if (this.current.get(name) === status) continue;
      if (status === undefined) this.current.delete(name);
      else this.current.set(name, status);
      this.emit(name, status);
    }
  }

  private recomputeAll(state: RegistryState): void {
    const next = computeServingStatuses(state);
    const previous = this.current;
    this.current = next;
    this.rememberAll(state);
    for (const [name, status] of next) if (previous.get(name) !== status) this.emit(name, status);
    for (const name of previous.keys()) if (!next.has(name)) this.emit(name, undefined);
  }

  private remember(node: string, serviceId: string, name: string | undefined): void {
    let ofNode = this.names.get(node);
    if (name !== undefined) {
      if (ofNode === undefined) this.names.set(node, (ofNode = new Map()));
      ofNode.set(serviceId, name);
    } else if (ofNode !== undefined) {
      ofNode.delete(serviceId);
      if (ofNode.size === 0) this.names.delete(node);
    }
  }

  private rememberAll(state: RegistryState): void {
    this.names = new Map();
    for (const s of state.services.values()) this.remember(s.node, s.id, s.service);
  }

  /** The process is up and serving (NOT_SERVING instead while the log cannot store writes). */
  start(state: RegistryState): void {
    this.current = computeServingStatuses(state);
    this.rememberAll(state);
    this.started = true;
    this.setProcessStatus(this.writable ? 'SERVING' : 'NOT_SERVING');
  }

  /** The log can (again) or cannot (a full disk) store writes: `""` follows, SERVING only while it can. */
  setWritable(writable: boolean): void {
    this.writable = writable;
    if (this.started && !this.frozen) this.setProcessStatus(writable ? 'SERVING' : 'NOT_SERVING');
  }

  private setProcessStatus(status: ServingStatus): void {
    if (status === this.processStatus) return;
    this.processStatus = status;
    this.emit('', status);
  }

  /** Shutdown: everything reads NOT_SERVING from now on and watchers are told. */
  shutdown(): void {
    if (this.frozen) return;
    this.frozen = true;
    this.processStatus = 'NOT_SERVING';
    this.emit('', 'NOT_SERVING');
    for (const name of this.current.keys()) this.emit(name, 'NOT_SERVING');
  }

  private emit(name: string, status: ServingStatus | undefined): void {
    for (const l of [...this.listeners]) l(name, status);
  }
}

/** One name's status ("" is the process, SERVING while it runs): the stream's `serving_status` item. */
export function servingOf(state: RegistryState, name: string): ServingStatus | undefined {
  let any = false;
  const isCritical = (c: { status: string }) => c.status === 'critical';
  for (const s of state.instancesUnordered(name)) {
    any = true;
    const critical = state.checksOfService(s.node, '').some(isCritical) || (s.id !== '' && state.checksOfService(s.node, s.id).some(isCritical));
    if (!critical) return 'SERVING';
  }
  return any ? 'NOT_SERVING' : undefined;
}
