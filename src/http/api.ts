/** What every handler may use: the runtime, the agent's identity and the settings that shape answers. */
import type { Runtime } from '../runtime/index.ts';
import type { Dialect } from './render.ts';

export interface ApiContext {
  runtime: Runtime;
  dialect: Dialect;
  datacenter: string;
  nodeName: string;
  /** Smallest session TTL accepted (Consul's session_ttl_min). */
  sessionTtlMsMin: number;
  version: string;
  /** host:port reported as the leader and the only peer by /v1/status. */
  serverAddress: string;
  startedAtMs: number;
  /** enable_script_checks: script and container checks may be registered through the HTTP API. */
  enableScriptChecks: boolean;
  /** The built dashboard (dist/ui) served at /ui/; absent: /ui/ answers 404 saying how to build it. */
  uiDir?: string;
  /** What /v1/agent/metrics serves. */
  metrics: MetricsView;
  /** Reload, leave and force-leave (src/http/routes/agent-ops.ts). */
  operations?: AgentOperations;
}

/** The agent's own operations, provided by src/agent/assemble.ts. */
export interface AgentOperations {
  /** Reads the config file again and applies it; rejects with the reason when it does not validate. */
  reload(): Promise<{ restartNeeded: string[] }>;
  /** Leaves the cluster and stops the agent, once the answer is on its way. */
  leave(): void;
  /** Moves a failed member to left (`prune`: forgets it); `unknown` when no member has that name. */
  forceLeave(node: string, prune: boolean): 'left' | 'alive' | 'unknown';
}

/** The agent's metrics, in the two forms /v1/agent/metrics serves. */
export interface MetricsView {
  /** The Prometheus text exposition format and its content type. */
  prometheus(): Promise<{ contentType: string; text: string }>;
  /** Consul's JSON shape (Timestamp, Gauges, Points, Counters, Samples). */
  consul(): Promise<unknown>;
}
