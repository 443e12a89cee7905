import type { Behavior } from './commands.ts';

/** A session as held in state; the HTTP layer renders it in the spec's field names. */
export interface Session {
  id: string;
  name: string;
  node: string;
  lockDelayNs: number;
  behavior: Behavior;
  ttl: string;
  ttlMs: number;
  nodeChecks: string[];
  serviceChecks: { ID: string; Namespace: string }[] | null;
  /** Legacy `Checks` (bound too), present only when a client sent it with more than the gossip check. */
  checks?: string[];
  createIndex: number;
  modifyIndex: number;
  /** Index and time of the entry that last started the TTL (create or renew). */
  renewIndex: number;
  renewedAtMs: number;
}

/** A key-value entry. Value is base64 (null when the body was empty); flags is uint64 as decimal text. */
export interface KvEntry {
  key: string;
  value: string | null;
  flags: string;
  /** Holding session id, or undefined when unlocked. */
  session: string | undefined;
  lockIndex: number;
  createIndex: number;
  modifyIndex: number;
}

/** A node of the catalog. */
export interface CatalogNode {
  id: string;
  node: string;
  address: string;
  meta: Record<string, string>;
  createIndex: number;
  modifyIndex: number;
}

export type CheckStatus = 'passing' | 'warning' | 'critical';

/** A health check record (the node's gossip check for now; the full check kinds come with the checks issue). */
export interface HealthCheck {
  node: string;
  checkId: string;
  name: string;
  status: CheckStatus;
  notes: string;
  output: string;
  serviceId: string;
  serviceName: string;
  serviceTags: string[];
  type: string;
  createIndex: number;
  modifyIndex: number;
}
