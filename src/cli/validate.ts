/**
 * `roster validate <file>`: judges a config file as the agent reads one at start or on reload — every
 * setting, the data dir it names, the form of each service and check it defines and the services its
 * checks name — without starting anything, as `consul validate` does, with the agent's own code. Only the
 * file is judged: ROSTER_* variables and flags, which would override it, are not read. Prints
 * `Configuration is valid!`; a file the agent would refuse exits 1 with the agent's reason. What only a
 * running agent knows is named instead of claimed: a check whose ServiceID names no service of the file is
 * taken only if that service is registered on the agent's node, so such a file prints what it depends on
 * (exit 0) rather than `Configuration is valid!`.
 */
import { resolve } from 'node:path';
import { CliError } from './errors.ts';

export async function validateCommand(file: string, out: (text: string) => void): Promise<void> {
  const [{ ConfigError, loadConfig }, { parseLocalDefinitions }, { foreignServiceChecks }, { checkDataDirMode, checkDataDirPath }] = await Promise.all([
    import('../config.ts'), import('../agent/local-definitions.ts'), import('../agent/definitions-sync.ts'), import('../agent/data-dir-mode.ts'),
  ]);
  let dependsOn: string[] = [];
  try {
    const config = loadConfig(['--config-file', file], {});
    if (config !== 'help') {
      const dataDir = resolve(config.dataDir);
      checkDataDirPath(dataDir);
      checkDataDirMode(dataDir, config.nats.length > 0);
      dependsOn = foreignServiceChecks(parseLocalDefinitions(config))
        .map((check) => `  check "${check.checkId}" needs a service with ID "${check.serviceId}" registered on the agent's node (it is not in this file)\n`);
    }
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message);
    throw err;
  }
  if (dependsOn.length === 0) out('Configuration is valid!\n');
  else out(`Configuration is valid if the agent holds what this file names but does not define; an agent without it refuses the file:\n${dependsOn.join('')}`);
}
