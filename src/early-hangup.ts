/**
 * SIGHUP while the agent starts. Until a process listens for SIGHUP, the signal ends it (exit 129, nothing
 * logged), and loading the agent's modules takes a good part of a second: a supervisor's reload sent then
 * would kill the agent. So the entry point calls `holdHangups()` before it loads them (this module imports
 * nothing, to be loaded first), and the agent takes over once it is ready with `handOverHangups()`, which
 * says what came meanwhile. A SIGHUP that came before the configuration was read needs nothing: what was
 * read is what the file held then. One that came after may be about a file changed since it was read, so
 * the agent reloads once (several such signals make one reload).
 */

/** SIGHUPs received while the agent started, by whether the configuration had been read. */
export interface HeldHangups {
  beforeRead: number;
  afterRead: number;
}

let held: HeldHangups | undefined;
let configurationRead = false;

function hold(): void {
  if (held === undefined) return;
  if (configurationRead) held.afterRead += 1;
  else held.beforeRead += 1;
}

/** From now until `handOverHangups`, a SIGHUP is counted instead of ending the process. Idempotent. */
export function holdHangups(): void {
  if (held !== undefined) return;
  held = { beforeRead: 0, afterRead: 0 };
  process.on('SIGHUP', hold);
}

/** The configuration is being read: a SIGHUP from now on may be about a later version of the file. */
export function readingConfiguration(): void {
  configurationRead = true;
}

/** Installs the running agent's `listener` for SIGHUP (before removing the holder, so none is missed) and returns what was held. */
export function handOverHangups(listener: () => void): HeldHangups {
  process.on('SIGHUP', listener);
  process.removeListener('SIGHUP', hold);
  const got = held ?? { beforeRead: 0, afterRead: 0 };
  held = undefined;
  return got;
}
