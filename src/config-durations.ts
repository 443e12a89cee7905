/** The agent's duration settings: Go's duration text, checked. */
import { ConfigError } from './config-error.ts';
import { goDurationMaxText, parseGoDurationMs } from './util/duration.ts';

/** Gossip heartbeats go out once a second: a member is failed only after more than that without one. */
const gossipHeartbeatMs = 1_000;

/** `suspicion`: how long a member may go unheard before it is failed. @default 5s */
export function suspicion(text: string | undefined): number {
  const ms = duration('suspicion', text, 5_000);
  if (ms <= gossipHeartbeatMs) throw new ConfigError(`--suspicion: "${text}" is not more than the gossip heartbeat interval (1s): members would be failed between two heartbeats`);
  return ms;
}

/** A positive duration setting, `fallback` when it is not given. */
export function duration(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const ms = parseGoDurationMs(text);
  if (ms === undefined || ms <= 0) throw new ConfigError(`--${name}: "${text}" is not a positive duration such as 10s (at most ${goDurationMaxText})`);
  return ms;
}
