/** A setting that does not validate, named with the reason: a start stops (exit code 2), a reload is refused. */
export class ConfigError extends Error {}
