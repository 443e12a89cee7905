/**
 * Roster's release, read from its package.json: the agent reports it (`Config.RosterVersion`, the seed
 * dialect's `Config.Version`) and `roster --version` prints it. The directory above this module's is the
 * package root in the source tree, and dist/server once built (the build copies package.json there).
 */
import { readFileSync } from 'node:fs';

export const rosterVersion = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
