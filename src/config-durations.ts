/** The agent's duration settings: Go's duration text, checked. */
import { ConfigError } from './config-error.ts';
import { sessionTtlMsMax } from './domain/limits.ts';
import { goDurationMaxText, parseGoDurationMs } from './util/duration.ts';

/** Gossip heartbeats go out once a second: a member is failed only after more than that without one. */
const gossipHeartbeatMs = 1_000;

/** `suspicion`: how long a member may go unheard before it is failed. @default 5s */
export function suspicion(text: string | undefined): number {
  const ms = duration('suspicion', text, 5_000);
  if (ms <= gossipHeartbeatMs) throw new ConfigError(`--suspicion: "${text}" is not more than the gossip heartbeat interval (1s): members would be failed between two heartbeats`);
  return ms;
}

/**
 * `session_ttl_min`: the smallest session TTL accepted. Above the largest TTL (24h) no session with a TTL
 * could be created at all, so that is refused at start rather than at every session create.
 */
export function sessionTtlMin(text: string | undefined, fallback: number): number {
  const ms = duration('session-ttl-min', text, fallback);
  if (ms > sessionTtlMsMax) throw new ConfigError(`--session-ttl-min: "${text}" is more than the largest session TTL (24h): no session with a TTL could be created`);
  return ms;
}

/**
 * The smallest `write_timeout`. A durable write waits for a group commit's fdatasync (a few ms, at times
 * 100 ms on a cloud disk) or, in a cluster, for the nats-servers to store it; a bound near that
 * would answer writes as timed out, outcome unknown, while the log is merely busy, and would stop the start
 * at its own first write.
 */
export const writeTimeoutMsMin = 1_000;

/** `write_timeout`: how long a write may wait for its commit before it is answered as timed out. @default 30s */
export function writeTimeout(text: string | undefined): number {
  const ms = duration('write_timeout', text, 30_000);
  if (ms < writeTimeoutMsMin) {
    throw new ConfigError(`--write_timeout: "${text}" is less than 1s: a durable write (an fdatasync, a cluster's round trip) can take `
      + 'that long on a busy disk or network, and writes would be answered as timed out with their outcome unknown');
  }
  return ms;
}

/**
 * `check_update_interval`: how long a check's output-only change may wait to be written (status changes are
 * written at once). "0s" writes every change at once. @default 5m, as Consul's
 */
export function checkUpdateInterval(text: string | undefined): number {
  if (text === undefined) return 300_000;
  const ms = parseGoDurationMs(text);
  if (ms === undefined || ms < 0) throw new ConfigError(`--check_update_interval: "${text}" is not a duration such as 5m, or 0s to write every output change at once (at most ${goDurationMaxText})`);
  return ms;
}

/** A positive duration setting, `fallback` when it is not given. */
export function duration(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const ms = parseGoDurationMs(text);
  if (ms === undefined || ms <= 0) throw new ConfigError(`--${name}: "${text}" is not a positive duration such as 10s (at most ${goDurationMaxText})`);
  return ms;
}
