/**
 * How the `roster` command fails: a CliError carries its message and exit code. Expected failures
 * (a CAS not applied, a lock not acquired, an unreachable agent) are values of this type; the entry
 * prints `roster: <message>` on stderr and exits with the code. Anything else is a bug and crashes.
 */

/** Exit codes of the `roster` command (`lock` exits with its child's code instead). */
export const exitCodes = {
  ok: 0,
  /** The operation failed: CAS not applied, lock not acquired, not found, agent unreachable or refusing. */
  failed: 1,
  /** The command line is wrong (unknown flag, missing argument, bad value); nothing was sent. */
  usage: 2,
} as const;

export class CliError extends Error {
  constructor(message: string, readonly exitCode: number = exitCodes.failed) {
    super(message);
    this.name = 'CliError';
  }
}

export function usageError(message: string): CliError {
  return new CliError(message, exitCodes.usage);
}
