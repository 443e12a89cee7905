/** What happens to the locks a session holds when it is invalidated: released, or the keys deleted. */
export type Behavior = 'release' | 'delete';

/** A session as held in state; the HTTP layer renders it in the spec's field names. */
export interface Session {
  id: string;
  name: string;
  node: string;
  /** Lock delay in nanoseconds, already validated (0 disables). */
  lockDelayNs: number;
  behavior: Behavior;
  /** The TTL as the client wrote it ("" when none); ttlMs is its parsed value. */
  ttl: string;
  ttlMs: number;
  nodeChecks: string[];
  serviceChecks: { ID: string; Namespace: string }[] | null;
  /** Legacy `Checks` (bound too), present only when a client sent it with more than the gossip check. */
  checks?: string[];
  /**
   * The identity that created it (a token's subject, `app:<appKey>` for a signed request): only it, or an
   * operator, may renew, destroy or lock with it. Absent when it was created without authentication.
   */
  owner?: string;
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
  /** The node's tagged addresses as registered (`lan`, `wan`, …); absent when none were given. */
  taggedAddresses?: Record<string, string>;
  createIndex: number;
  modifyIndex: number;
}

export type CheckStatus = 'passing' | 'warning' | 'critical';

/** Check kinds (the record's Type); "" is a check without a probe (node checks such as gossipHealth). */
export type CheckKind = 'ttl' | 'http' | 'tcp' | 'grpc' | 'script' | 'docker' | 'alias' | '';

/** What a check runner needs to probe, as registered (durations parsed to ms; 0 when unset). */
export interface CheckDefinition {
  intervalMs: number;
  timeoutMs: number;
  ttlMs: number;
  /** Interval/Timeout as rendered (Go duration text, "" when unset). */
  interval: string;
  timeout: string;
  http?: string;
  method?: string;
  header?: Record<string, string[]>;
  body?: string;
  tlsSkipVerify?: boolean;
  tlsServerName?: string;
  disableRedirects?: boolean;
  tcp?: string;
  grpc?: string;
  grpcUseTls?: boolean;
  args?: string[];
  runtimeContainerId?: string;
  shell?: string;
  aliasService?: string;
  aliasNode?: string;
  /** Service deregistered once this check stays critical longer than this (0 = never). */
  deregisterCriticalServiceAfterMs: number;
  successBeforePassing: number;
  failuresBeforeWarning: number;
  failuresBeforeCritical: number;
  outputMaxSize: number;
}

/** A health check record with what its machine and runner need. */
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
  type: CheckKind;
  definition: CheckDefinition;
  /** Registered through the agent (run by that node) or through the catalog (never run). */
  source: 'agent' | 'catalog';
  /** Index of the registration: results proposed for an older registration apply as no-ops. */
  generation: number;
  /** Consecutive-result counters of the thresholds, saturated at their thresholds. */
  successCounter: number;
  failuresCounter: number;
  /** Index and time of the last TTL update (pass/warn/fail/update or registration). */
  ttlUpdateIndex: number;
  /** Entry time at which the check last entered critical (0 when not critical). */
  criticalSinceMs: number;
  createIndex: number;
  modifyIndex: number;
}

/** A service instance registered on a node. */
export interface ServiceInstance {
  node: string;
  id: string;
  service: string;
  kind: string;
  tags: string[];
  address: string;
  port: number;
  meta: Record<string, string>;
  taggedAddresses: Record<string, { Address: string; Port: number }>;
  weights: { Passing: number; Warning: number };
  enableTagOverride: boolean;
  createIndex: number;
  modifyIndex: number;
}
