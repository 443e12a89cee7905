/** What every subcommand of `roster` gets: the agent client, the output mode and the streams. */
import { AgentClient, type ConnectionOptions } from './client.ts';
import { colorsFor, stringifyExact, type Colors } from './output.ts';
import { writeOut } from './stdout.ts';

export interface CliContext {
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  stdin: NodeJS.ReadStream;
  colors: Colors;
  /** `--json`: one JSON document (or one per line for streams) on stdout instead of human text. */
  json: boolean;
  client: AgentClient;
  /** Writes to stdout, checked (stdout.ts): a failed write makes the command exit 1 once it is done. */
  out(text: string | Buffer): void;
  /** Writes a value as one line of exact JSON (uint64 flags kept), checked as `out` is. */
  outJson(value: unknown): void;
}

export interface ClientFlags extends ConnectionOptions {
  json?: boolean;
}

export function makeContext(flags: ClientFlags, env: NodeJS.ProcessEnv = process.env): CliContext {
  const stdout = process.stdout;
  return {
    env, stdout, stderr: process.stderr, stdin: process.stdin,
    colors: colorsFor(stdout, env),
    json: flags.json === true,
    client: AgentClient.from(flags, env),
    out: writeOut,
    outJson: (value) => { writeOut(`${stringifyExact(value)}\n`); },
  };
}
