/**
 * The config file's services and checks, registered as this node's local definitions when the agent
 * starts (script checks allowed with enable_local_script_checks).
 */
import { ConfigError, type Config } from '../config.ts';
import { RegistryError } from '../domain/errors.ts';
import { parseCheck, parseService } from '../http/definitions.ts';
import type { Runtime } from '../runtime/index.ts';

/**
 * Registers the config file's services and checks. A definition that does not validate stops the start
 * with its reason. On a full disk they are registered once the log can store writes again, as this node's
 * own registration is.
 */
export async function registerLocalDefinitions(runtime: Runtime, config: Config): Promise<void> {
  const local = { scriptsAllowed: config.enableScriptChecks || config.enableLocalScriptChecks, origin: 'local' as const };
  const node = config.nodeName;
  const services = config.services.map((raw) => definition('service', () => parseService(raw, local)));
  const checks = config.checks.map((raw) => definition('check', () => parseCheck(raw, local)));
  if (services.length === 0 && checks.length === 0) return;
  await runtime.onceWritable('the config file\'s services and checks', async () => {
    for (const parsed of services) {
      const result = await runtime.propose({ t: 'service.register', node, service: parsed.service, checks: parsed.checks, replaceExistingChecks: true });
      if (!result.ok) throw new ConfigError(`--config-file: service "${parsed.service.id}" was not registered: ${result.reason}`);
    }
    for (const check of checks) {
      const result = await runtime.propose({ t: 'check.register', node, check });
      if (!result.ok) throw new ConfigError(`--config-file: check "${check.checkId}" was not registered: ${result.reason}${result.detail ? ` ${result.detail}` : ''}`);
    }
  });
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
