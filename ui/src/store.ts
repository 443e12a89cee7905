/**
 * What the page knows: the stream's views (kept whole by the stream client and swapped in here), the
 * lists read over HTTP, and which views have arrived (a page says "waiting" rather than "none" until
 * the views it needs are complete).
 */
import type { CatalogNode, Check, HealthEntry, KvEntry, Member, Session } from './model.ts';
import type { KvItem } from './kv-model.ts';

export const data = {
  entries: new Map() as ReadonlyMap<string, HealthEntry>,
  checks: new Map() as ReadonlyMap<string, Check>,
  sessions: new Map() as ReadonlyMap<string, Session>,
  /** The held locks: KV entries with a Session (the `lockedOnly` view of every key). */
  locks: new Map() as ReadonlyMap<string, KvEntry>,
  /** The KV browser's view: the entries under `kvPrefix`. */
  kv: new Map() as ReadonlyMap<string, KvItem>,
  kvPrefix: undefined as string | undefined,
  /** Why the stream refused the KV browser's subscription (a token that may not read the whole prefix). */
  kvError: undefined as string | undefined,
  /** A service page's view: the health entries of the service `serviceName` (`service_health` with its name). */
  service: new Map() as ReadonlyMap<string, HealthEntry>,
  serviceName: undefined as string | undefined,
  /**
   * A node page's (or a session page's) own views of one node: its checks (`node_checks`) and its sessions
   * (`sessions` with the node's name), with the stream's refusal of each (shown in the section it fills).
   */
  nodeChecks: new Map() as ReadonlyMap<string, Check>,
  nodeChecksOf: undefined as string | undefined,
  nodeChecksError: undefined as string | undefined,
  nodeSessions: new Map() as ReadonlyMap<string, Session>,
  nodeSessionsOf: undefined as string | undefined,
  nodeSessionsError: undefined as string | undefined,
  /** This agent's node name (from /v1/agent/self): the agent endpoints act on it alone. */
  self: undefined as string | undefined,
  nodes: [] as CatalogNode[],
  members: [] as Member[],
};

export type StreamField = 'entries' | 'checks' | 'sessions' | 'locks' | 'kv' | 'service' | 'nodeChecks' | 'nodeSessions';

/** Asks for a render (at most one per turn of the event loop): set by main.ts, called by pages whose HTTP reads answered. */
export const repaint = { now: (): void => undefined };

export const arrived = new Set<StreamField>();

/**
 * The stream's refusal of a view, by view: one every page shares (a token that may not read every
 * service, check, session or key) or a service page's own; a page that needs one shows the refusal
 * instead of waiting for it. The KV browser's own view keeps its refusal in `data.kvError`.
 */
export const refused = new Map<StreamField, string>();

/** A page of the dashboard: built once per address, then brought up to date on every change. */
export interface Page {
  title?: string;
  root: HTMLElement;
  /** The stream views the page needs before it can show anything. */
  needs: StreamField[];
  update(): void;
  /** Shown under the refusal when a view it needs is refused: what the token may still reach from here. */
  whenRefused?(): HTMLElement;
  /** The node whose own views (`nodeChecks`, `nodeSessions`) the page watches, once it knows it. */
  watches?(): { node?: string };
  /** Called when the page is left (stops its timers). */
  close?(): void;
}
