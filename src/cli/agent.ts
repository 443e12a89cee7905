/**
 * `roster agent [flags]`: exactly what `npm start` runs (src/agent-main.ts, behind src/main.ts's check
 * of the descriptor limit), with the same flags, environment and config file. `--dev`, like
 * `consul agent -dev`: a fresh temporary data dir removed on exit, node name `dev`, log level debug,
 * readable log lines when stdout is a terminal (each unless given by a flag, the environment or the
 * config file), and HTTP on 127.0.0.1:8500 as always unless given.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentFlagNames, usage, type ConfigDefaults } from '../config.ts';
import { normaliseAgentFlags } from './args.ts';
import { holdHangups } from '../early-hangup.ts';

export const devUsage = `  --dev                    development mode: a temporary data dir removed on exit, node name "dev",
                           log level debug, --log-format pretty on a terminal (each unless given);
                           for trying Roster out, not for production`;

/** What `--dev` changes: the defaults only, so a flag, the environment or the config file still wins. */
export function devDefaults(dataDir: string, stdoutIsTty = Boolean(process.stdout.isTTY)): ConfigDefaults {
  return { dataDir, nodeName: 'dev', logLevel: 'debug', logFormat: stdoutIsTty ? 'pretty' : 'json' };
}

export async function agentCommand(args: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const argv = normaliseAgentFlags(args, new Set([...agentFlagNames, 'dev']));
  const dev = argv.includes('--dev');
  const rest = argv.filter((a) => a !== '--dev');
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${usage}\n${devUsage}\n`);
    return;
  }
  // SIGHUP would end the process while the agent's modules load (src/early-hangup.ts).
  holdHangups();
  // Loaded only here: the client commands never load the server (uWebSockets.js, the log, pino).
  const { main } = await import('../agent-main.ts');
  if (!dev) { main(rest, env); return; }
  const dataDir = mkdtempSync(join(tmpdir(), 'roster-dev-'));
  // main() ends the process with process.exit on every path (shutdown, failed start): 'exit' always runs.
  process.on('exit', () => rmSync(dataDir, { recursive: true, force: true }));
  process.stderr.write(`roster: dev mode: data in ${dataDir} (removed on exit); do not use in production\n`);
  main(rest, env, devDefaults(dataDir));
}
