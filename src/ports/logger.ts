/**
 * The logger every part of the agent writes through. pino's logger has all of it; tests pass
 * `silentLogger` or a recorder. `isLevelEnabled` lets a hot path skip building a line nobody keeps.
 */
export interface Logger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
  isLevelEnabled(level: string): boolean;
}

/** A logger that keeps nothing. */
export const silentLogger: Logger = {
  debug() {}, info() {}, warn() {}, error() {}, isLevelEnabled: () => false,
};
