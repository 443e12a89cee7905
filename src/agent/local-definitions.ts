/**
 * The config file's services and checks: their form judged (script checks allowed with
 * enable_local_script_checks), by the agent and by `roster validate`, and registered as this node's local
 * definitions when the agent starts; a reload brings them in line with the file again (definitions-sync.ts).
 */
import { ConfigError, type Config } from '../config.ts';
import { RegistryError } from '../domain/errors.ts';
import { parseCheck, parseService } from '../http/definitions.ts';
import type { Runtime } from '../runtime/index.ts';
import { judgeSync, planSync, recordOf, registeredOn, runSync, type DefinitionsRecord, type LocalDefinitions, type RecordStore } from './definitions-sync.ts';

export type { LocalDefinitions } from './definitions-sync.ts';

/** Validates the config file's services and checks; a definition that does not validate throws a ConfigError with its reason. */
export function parseLocalDefinitions(config: Config): LocalDefinitions {
  const local = { scriptsAllowed: config.enableScriptChecks || config.enableLocalScriptChecks, origin: 'local' as const };
  const defs = {
    services: config.services.map((raw) => definition('service', () => parseService(raw, local))),
    checks: config.checks.map((raw) => definition('check', () => parseCheck(raw, local))),
  };
  // One ID names one definition: a second one would silently replace the first.
  once('service', defs.services.map((s) => s.service.id));
  once('check', [...defs.services.flatMap((s) => s.checks), ...defs.checks].map((c) => c.checkId));
  return defs;
}

function once(what: string, ids: string[]): void {
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) throw new ConfigError(`--config-file: ${what} ID "${id}" is defined more than once in the file`);
    seen.add(id);
  }
}

/**
 * Registers the config file's services and checks at start, and deregisters those an earlier run
 * registered from the file (`store`'s record) that it no longer defines: the sync of a reload
 * (definitions-sync.ts), judged whole first against the registry and the file's state quota. A definition
 * the registry refuses stops the start with its reason. On a full disk they are registered once the log
 * can store writes again, as this node's own registration is; while that registration waits for another
 * node holding this node's ID (a cluster node renamed on its data dir, or started on a copy of a live
 * node's: self-registration.ts), they are registered after it, and a refusal then is logged.
 */
export async function registerLocalDefinitions(runtime: Runtime, config: Config, store?: RecordStore): Promise<DefinitionsRecord> {
  const defs = parseLocalDefinitions(config);
  const record = recordOf(store?.read());
  if (defs.services.length === 0 && defs.checks.length === 0 && record.services.size === 0 && record.checks.size === 0) return record;
  const register = () => runtime.onceWritable('the config file\'s services and checks', async () => {
    const plan = planSync(config.nodeName, record, defs, registeredOn(runtime, config.nodeName));
    judgeSync(runtime, plan, config.limits.stateBytesMax);
    await runSync(runtime, plan, record, store);
  });
  if (runtime.registration.waiting) {
    void runtime.registration.done.then(register)
      .catch((err: unknown) => runtime.logger.error({ err: err instanceof ConfigError ? err.message : err }, 'registering the config file\'s services and checks failed'));
    return record;
  }
  await register();
  return record;
}

function definition<T>(what: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (!(err instanceof RegistryError)) throw err;
    const details = err.details ? ` ${JSON.stringify(err.details)}` : '';
    throw new ConfigError(`--config-file: invalid ${what} definition: ${err.message}${details}`);
  }
}
