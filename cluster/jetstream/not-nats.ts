/**
 * How a connection to an address that is not a nats-server fails, said in the operator's words. nats.js
 * waits for the server's greeting (an INFO line) after connecting: a server of another protocol (an HTTP
 * port, a nats-server's cluster or monitoring port) closes the connection or answers something else, and
 * nats.js says "error connecting - node provided an undefined error" or "unexpected response from server".
 * Either is reworded to name the addresses and what to check; any other error is returned as it is (a
 * timeout too: it may be a connection that never got through).
 */

/** The nats.js connect failures that mean: something took the connection, but not as a NATS server. */
const notNatsPattern = /node provided an undefined error|unexpected response from server/;

/** `err`, or when it says the address is not a nats-server, an error that says so and names `servers`. */
export function notNatsServer(err: unknown, servers: readonly string[]): unknown {
  const message = err instanceof Error ? err.message : String(err);
  if (!notNatsPattern.test(message)) return err;
  const where = servers.length === 1 ? servers[0] : `none of ${servers.join(', ')}`;
  return new Error(`${where} did not answer as a NATS server (${message}): check that --nats names the `
    + 'nats-servers\' client port (4222 by default), not an HTTP, cluster or monitoring port', { cause: err });
}
