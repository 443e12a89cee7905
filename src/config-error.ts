/**
 * A setting that does not validate, named with the reason: a start stops (exit code 2), a reload is refused.
 * `commandLine`: the flags themselves could not be read (an unknown or malformed flag), so the start prints
 * the usage after the reason; for a value that does not validate the reason alone says what to fix.
 */
export class ConfigError extends Error {
  constructor(message: string, readonly commandLine = false) {
    super(message);
  }
}
