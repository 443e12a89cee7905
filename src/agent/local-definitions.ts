/**
 * The config file's services and checks, registered as this node's local definitions when the agent
 * starts (script checks allowed with enable_local_script_checks), and brought in line with the file again
 * on a reload.
 */
import { ConfigError, type Config } from '../config.ts';
import { RegistryError } from '../domain/errors.ts';
import type { Command } from '../domain/commands.ts';
import { parseCheck, parseService, type ParsedService } from '../http/definitions.ts';
import type { CheckRegistration } from '../domain/commands.ts';
import type { Runtime } from '../runtime/index.ts';

/** The config file's definitions, validated. */
export interface LocalDefinitions {
  services: ParsedService[];
  checks: CheckRegistration[];
}

/** Validates the config file's services and checks; a definition that does not validate throws a ConfigError with its reason. */
export function parseLocalDefinitions(config: Config): LocalDefinitions {
  const local = { scriptsAllowed: config.enableScriptChecks || config.enableLocalScriptChecks, origin: 'local' as const };
  return {
    services: config.services.map((raw) => definition('service', () => parseService(raw, local))),
    checks: config.checks.map((raw) => definition('check', () => parseCheck(raw, local))),
  };
}

/**
 * Registers the config file's services and checks. A definition that does not validate stops the start
 * with its reason. On a full disk they are registered once the log can store writes again, as this node's
 * own registration is; while that registration waits for another node holding this node's ID (a cluster
 * node renamed on its data dir, or started on a copy of a live node's: self-registration.ts), they are
 * registered after it, and a refusal then is logged.
 */
export async function registerLocalDefinitions(runtime: Runtime, config: Config): Promise<LocalDefinitions> {
  const defs = parseLocalDefinitions(config);
  if (defs.services.length === 0 && defs.checks.length === 0) return defs;
  const register = () => runtime.onceWritable('the config file\'s services and checks', async () => {
    for (const parsed of defs.services) await propose(runtime, registerService(config.nodeName, parsed), `service "${parsed.service.id}"`, 'registered');
    for (const check of defs.checks) await propose(runtime, { t: 'check.register', node: config.nodeName, check }, `check "${check.checkId}"`, 'registered');
  });
  if (runtime.registration.waiting) {
    void runtime.registration.done.then(register)
      .catch((err: unknown) => runtime.logger.error({ err: err instanceof ConfigError ? err.message : err }, 'registering the config file\'s services and checks failed'));
    return defs;
  }
  await register();
  return defs;
}

/**
 * Brings the registry in line with a reloaded config file: definitions new in the file are registered,
 * changed ones registered again (replacing the service's checks), and ones no longer in the file
 * deregistered. Only what came from the file is touched: services and checks registered through the API
 * are not in `before`, so they stay.
 */
export async function syncLocalDefinitions(runtime: Runtime, node: string, before: LocalDefinitions, after: LocalDefinitions): Promise<void> {
  const oldServices = new Map(before.services.map((s) => [s.service.id, JSON.stringify(s)]));
  const newServices = new Set(after.services.map((s) => s.service.id));
  const oldChecks = new Map(before.checks.map((c) => [c.checkId, JSON.stringify(c)]));
  const newChecks = new Set(after.checks.map((c) => c.checkId));
  // A failed deregistration can only mean it is gone already (deregistered through the API): the wanted outcome.
  for (const id of oldChecks.keys()) {
    if (!newChecks.has(id)) await runtime.propose({ t: 'check.deregister', node, checkId: id });
  }
  for (const id of oldServices.keys()) {
    if (!newServices.has(id)) await runtime.propose({ t: 'service.deregister', node, serviceId: id });
  }
  for (const parsed of after.services) {
    if (oldServices.get(parsed.service.id) !== JSON.stringify(parsed)) await propose(runtime, registerService(node, parsed), `service "${parsed.service.id}"`, 'registered');
  }
  for (const check of after.checks) {
    if (oldChecks.get(check.checkId) !== JSON.stringify(check)) await propose(runtime, { t: 'check.register', node, check }, `check "${check.checkId}"`, 'registered');
  }
}

function registerService(node: string, parsed: ParsedService): Command {
  return { t: 'service.register', node, service: parsed.service, checks: parsed.checks, replaceExistingChecks: true };
}

async function propose(runtime: Runtime, cmd: Command, what: string, done: 'registered'): Promise<void> {
  const result = await runtime.propose(cmd);
  if (!result.ok) throw new ConfigError(`--config-file: ${what} was not ${done}: ${result.reason}${result.detail ? ` ${result.detail}` : ''}`);
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
