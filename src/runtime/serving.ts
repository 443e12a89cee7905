/**
 * Serving status of each registered service name, as the gRPC health service and the `serving_status`
 * stream topic report it (watch.md §1.6): SERVING when at least one instance is healthy — its own
 * checks and its node's checks have no critical (warning counts as healthy) — NOT_SERVING when
 * instances exist but none is healthy, and no entry when no instance is registered. `""` is the Roster
 * process itself: SERVING while it runs and can store writes, NOT_SERVING while its log cannot (a full
 * disk) and once it shuts down.
 */
import type { RegistryState } from '../state/index.ts';

export type ServingStatus = 'SERVING' | 'NOT_SERVING';
/** undefined: the name is not registered (Check: NOT_FOUND; Watch: SERVICE_UNKNOWN). */
export type ServingListener = (name: string, status: ServingStatus | undefined) => void;

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

  /** Recomputes from state (after a batch that touched the catalog) and reports the differences. */
  update(state: RegistryState): void {
    if (this.frozen) return;
    const next = computeServingStatuses(state);
    const previous = this.current;
    this.current = next;
    for (const [name, status] of next) if (previous.get(name) !== status) this.emit(name, status);
    for (const name of previous.keys()) if (!next.has(name)) this.emit(name, undefined);
  }

  /** The process is up and serving (NOT_SERVING instead while the log cannot store writes). */
  start(state: RegistryState): void {
    this.current = computeServingStatuses(state);
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
  for (const s of state.instancesOf(name)) {
    any = true;
    const critical = state.checksOfNode(s.node).some((c) => (c.serviceId === '' || c.serviceId === s.id) && c.status === 'critical');
    if (!critical) return 'SERVING';
  }
  return any ? 'NOT_SERVING' : undefined;
}
