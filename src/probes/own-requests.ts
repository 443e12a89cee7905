/**
 * The connections this agent's own HTTP checks hold to its own HTTP port, by the address they come from.
 * The HTTP server bounds the requests in flight of each client address (limits.http_max_conns_per_client);
 * an agent's checks aimed at its own API (a blocking query, a long Timeout) come from one of the agent's
 * addresses, mostly 127.0.0.1, and would take that address's share from every local client (the CLI,
 * sidecars, scripts). Those probes are bounded by limits.check_probes_max already, so the server lets their
 * address have as many requests more as they hold (HttpServerOptions.ownRequestsFrom): they count neither
 * against the local clients nor for them. They carry no other trust: tokens, ACLs and the rate limit apply.
 */
import { isIPv4, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';

export class OwnRequests {
  private listener: { host: string; port: number } | undefined;
  /** Open connections to the agent's own port, by their local address (canonicalAddress). */
  private readonly open = new Map<string, number>();

  /** The HTTP server's address, once it listens (its host as configured, its port as bound). */
  listening(host: string, port: number): void {
    this.listener = { host, port };
  }

  /**
   * A probe's connected socket: counted while it stays open when it goes to the agent's own HTTP port.
   * A socket not connected yet is looked at once it is.
   */
  track(socket: Socket): void {
    if (socket.remotePort === undefined) {
      socket.once('connect', () => this.track(socket));
      return;
    }
    if (!this.isOwnPort(socket.remoteAddress, socket.remotePort) || socket.localAddress === undefined) return;
    const from = canonicalAddress(socket.localAddress);
    this.open.set(from, (this.open.get(from) ?? 0) + 1);
    socket.once('close', () => {
      const left = (this.open.get(from) ?? 1) - 1;
      if (left > 0) this.open.set(from, left);
      else this.open.delete(from);
    });
  }

  /** How many of the requests from `address` (an IP address in any of its text forms) are this agent's own probes'. */
  from(address: string): number {
    return this.open.size === 0 ? 0 : this.open.get(canonicalAddress(address)) ?? 0;
  }

  private isOwnPort(address: string | undefined, port: number): boolean {
    const listener = this.listener;
    if (listener === undefined || address === undefined || port !== listener.port) return false;
    const bound = canonicalAddress(listener.host);
    const to = canonicalAddress(address);
    // An unspecified address listens on every address of the host.
    if (bound === '[::]' || bound === '[::ffff:0:0]') return isLocalAddress(to);
    return to === bound || (!bound.startsWith('[') && isLocalAddress(to));
  }
}

/** Whether a canonical address is one of this host's: loopback, or an address of one of its interfaces. */
function isLocalAddress(address: string): boolean {
  if (address === '[::1]' || /^\[::ffff:7f[0-9a-f]{2}:/.test(address)) return true;
  return Object.values(networkInterfaces()).some((nets) => nets?.some((n) => canonicalAddress(n.address.replace(/%.*$/, '')) === address));
}

/**
 * An IP address in one text form, whatever form it came in (`127.0.0.1`, `::ffff:127.0.0.1`, uWS's
 * `0000:…:ffff:7f00:0001`): IPv6 as a URL writes it, an IPv4 address as its IPv4-mapped IPv6 address. A host
 * name is kept as it is.
 */
export function canonicalAddress(text: string): string {
  const v6 = isIPv4(text) ? `::ffff:${text}` : text;
  try {
    return new URL(`http://[${v6}]/`).host;
  } catch {
    return text;
  }
}
