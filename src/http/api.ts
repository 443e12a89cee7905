/** What every handler may use: the runtime, the agent's identity and the settings that shape answers. */
import type { Runtime } from '../runtime/index.ts';
import type { Dialect } from './render.ts';
import type { StopSignal } from '../util/stop.ts';

export interface ApiContext {
  runtime: Runtime;
  dialect: Dialect;
  datacenter: string;
  nodeName: string;
  /** Smallest session TTL accepted (Consul's session_ttl_min). */
  sessionTtlMsMin: number;
  /** Roster's own version (the consul dialect reports Consul's release as the server version: render.ts consulApiVersion). */
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
  /** The agent's log lines as they are written, for /v1/agent/monitor; absent: that route is not served. */
  logs?: LogSource;
  /** Profiles of the agent, for /v1/agent/debug/*; absent: those routes are not served. */
  profiler?: ProfileSource;
  /** The machine and process the agent runs on (src/agent/host-info.ts), for /v1/agent/host. */
  host?: () => Promise<unknown>;
}

/** Profiles of the running agent (src/agent/profiler.ts). */
export interface ProfileSource {
  /** `enable_debug`: profiles may be taken without authentication. */
  readonly enabled: boolean;
  busy(kind: 'cpu' | 'heap'): boolean;
  /** The profile taken over `ms`; undefined when `stop` ended it first. */
  take(kind: 'cpu' | 'heap', ms: number, stop: StopSignal): Promise<unknown>;
}

/** Log levels a monitor may ask for, most detailed first. */
export const monitorLevels = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type MonitorLevel = (typeof monitorLevels)[number];

/**
 * Hides in one log line (pino's object, changed in place) what its follower may not read; true when it
 * changed something, undefined when the line cannot be shown to that follower at all.
 */
export type LogRedaction = (entry: Record<string, unknown>) => boolean | undefined;

/** The agent's log as it is written (src/agent/log-tap.ts). */
export interface LogSource {
  /**
   * Hands every later line at `level` or above to `deliver` (pino's JSON line, or a line of text), the
   * first being the announcement, each put through `redact` when given; returns the function that stops
   * following.
   */
  follow(level: MonitorLevel, json: boolean, deliver: (line: string) => void, announce: { msg: string; fields: Record<string, unknown> },
    redact?: LogRedaction): () => void;
  /** Followers now. */
  readonly followed: number;
}

/** The agent's own operations, provided by src/agent/assemble.ts. */
export interface AgentOperations {
  /** Reads the config file again and applies it; rejects with the reason when it does not validate. */
  reload(): Promise<{ restartNeeded: string[] }>;
  /** Leaves the cluster and stops the agent, once the answer is on its way. */
  leave(): void;
  /**
   * Moves a failed member to left (`prune`: forgets it) and records in the log that it left; `unknown` when
   * neither a member nor a Roster node of the catalog has that name.
   */
  forceLeave(node: string, prune: boolean): Promise<'left' | 'alive' | 'unknown'>;
}

/** The agent's metrics, in the two forms /v1/agent/metrics serves. */
export interface MetricsView {
  /** The Prometheus text exposition format and its content type. */
  prometheus(): Promise<{ contentType: string; text: string }>;
  /** Consul's JSON shape (Timestamp, Gauges, Points, Counters, Samples). */
  consul(): Promise<unknown>;
}
