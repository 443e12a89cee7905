/**
 * The agent in the test's own process: the same assembly `src/main.ts` runs (runtime, HTTP API with the
 * WebSocket stream, gRPC health; ports 0), over the memory log instead of the WAL, with the real clock
 * unless a test passes another. Exports the same `withAgent`/`startAgent`/`call`/`client`/`expectError`
 * as `./agent.ts`, so a route-level test file switches between the two by its import line.
 *
 * Which suites run here: the route-level ones, whose tests only talk HTTP, WebSocket or gRPC to agents they
 * start: consul-kv-*, consul-health-*, health-api-{agent,catalog,filters}, kv-reads, kv-writes, blocking,
 * sessions-locks, sessions-endpoints, stream-topics, stream-watch, checks (the probe kinds), list-params,
 * conventions, edge and lock-queue. Nothing they assert depends on the process: between their requests and the
 * runtime sits the code `main` runs (config parsing, `assembleAgent`, the HTTP server and routes, the stream,
 * gRPC), and the memory log is the WAL's twin that passes the same log compliance suite.
 *
 * What needs a process stays on `./agent.ts`: restarts over a data dir, signals and exit codes, the data-dir lock,
 * the CLI, disk faults, settings read from the process environment (DOCKER_HOST), the process's memory and
 * liveness under fuzzing. So does at least one suite per feature area, so that every README feature is still
 * exercised against a really started process: KV and locks (kv), sessions (sessions, acl-sessions), checks
 * (checks-agents), catalog and health with config-file definitions (health-api-config), blocking
 * (acl-sessions, hardening), the stream (stream-consumers), gRPC (grpc-agent), auth, metrics.
 */
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { assembleAgent, type Agent as Assembled } from '../../src/agent/assemble.ts';
import { loadConfig } from '../../src/config.ts';
import { SystemClock, type Clock } from '../../src/ports/clock.ts';
import { MemoryLog, type MemoryLogStore } from '../../src/wal/index.ts';
import { forSuite } from './agent.ts';

export { call, client, expectError, onFreshAgent, sleep, type HttpResult } from './agent.ts';

export interface AgentOptions {
  /** Flags after the harness's own (`--http-port 0 --grpc-port 0 --node-name node1`). */
  args?: string[];
  /** Settings read as the agent's environment, over this process's. */
  env?: Record<string, string>;
  /** @default the system clock */
  clock?: Clock;
  /** The memory log's storage (a "restart" opens a new agent on the same store). @default a fresh one */
  store?: MemoryLogStore;
}

export interface Agent {
  url: string;
  /** host:port of the gRPC health service. */
  grpc: string;
  /** The assembled parts, for a test that looks inside. */
  parts: Assembled;
  log: MemoryLog;
  /** Everything the agent logged (pino's JSON lines). */
  output(): string;
  /** Stops the agent as SIGTERM would (HTTP closed, gRPC NOT_SERVING, runtime stopped). */
  stop(): Promise<void>;
  /** Nothing on disk to remove: for the same call sites as `./agent.ts`. */
  cleanup(): void;
}

/** One agent for the enclosing suite (file or describe), as `./agent.ts`'s `withAgent`. */
export function withAgent(started: (agent: Agent) => void | Promise<void>, o: AgentOptions = {}): void {
  forSuite(() => startAgent(o), started);
}

export async function startAgent(o: AgentOptions = {}): Promise<Agent> {
  const config = loadConfig(['--http-port', '0', '--grpc-port', '0', '--node-name', 'node1', ...(o.args ?? [])], { ...process.env, ...o.env });
  if (config === 'help') throw new Error('startAgent: --help is not an agent');
  let out = '';
  const logger = pino({ level: config.logLevel, base: { node: config.nodeName } }, { write: (line: string) => { out += line; } });
  const clock = o.clock ?? new SystemClock();
  const log = new MemoryLog({ clock, ...(o.store ? { store: o.store } : {}) });
  const parts = await assembleAgent(config, {
    log, clock, nodeId: randomUUID(), logger,
    // The process would exit 70; here the fatal line in output() and the closed HTTP server say it.
    onFatal: () => {},
  });
  let stopped: Promise<void> | undefined;
  return {
    url: parts.http.url, grpc: parts.grpc.address, parts, log,
    output: () => out,
    stop: () => (stopped ??= parts.stop()),
    cleanup: () => {},
  };
}
