export * from './commands.ts';
export * from './types.ts';
export * from './limits.ts';
export * from './errors.ts';
export * from './command-level.ts';
