/**
 * Where a client command looks for the agent unless told: shared by the command definitions (their help
 * text) and the client, and kept apart so building the definitions loads no client code.
 */
export const defaultHttpAddr = '127.0.0.1:8500';
