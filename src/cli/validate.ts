/**
 * `roster validate <file>`: judges a config file as the agent reads one at start or on reload — every
 * setting, and the form of each service and check it defines — without starting anything, as `consul
 * validate` does. Only the file is judged: ROSTER_* variables and flags, which would override it, are not
 * read. Prints `Configuration is valid!`; a file the agent would refuse exits 1 with the agent's reason.
 */
import { CliError } from './errors.ts';

export async function validateCommand(file: string, out: (text: string) => void): Promise<void> {
  const [{ ConfigError, loadConfig }, { parseLocalDefinitions }] = await Promise.all([import('../config.ts'), import('../agent/local-definitions.ts')]);
  try {
    const config = loadConfig(['--config-file', file], {});
    if (config !== 'help') parseLocalDefinitions(config);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message);
    throw err;
  }
  out('Configuration is valid!\n');
}
