/** TCP check (consul-compat.md §4 TCP): connect and close; the failure is Go's dial error text. */
import net, { isIPv4, isIPv6 } from 'node:net';
import { startDeadline } from './deadline.ts';
import { dialErrorText, splitHostPort } from './go-text.ts';
import { tcpTimeoutMsDefault } from './limits.ts';
import { critical, passing, type Probe } from './types.ts';

export interface TcpProbeOptions {
  /** host:port, or [v6]:port. */
  address: string;
  /** @default tcpTimeoutMsDefault (10 s) */
  timeoutMs?: number;
}

/** A host name: dot-separated labels of letters, digits, `-` and `_` (as DNS names and /etc/hosts use them). */
const hostNamePattern = /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/;

/**
 * Why `address` is not a dialable `host:port`, or undefined when it is: a non-empty host (a name, an IPv4
 * address, or an IPv6 address in brackets) and a port from 1 to 65535. Checked at registration, so a
 * typo is a 400 rather than a check critical forever.
 */
export function validateHostPort(address: string): string | undefined {
  const target = splitHostPort(address);
  if (typeof target === 'string') return target;
  const bracketed = address.startsWith('[');
  if (target.host === '') return `address ${address}: missing host (give host:port)`;
  if (bracketed ? !isIPv6(target.host.replace(/%[^%]+$/, '')) : !(isIPv4(target.host) || hostNamePattern.test(target.host))) {
    return `address ${address}: invalid host ${JSON.stringify(target.host)}${bracketed ? ' (brackets hold an IPv6 address)' : ''}`;
  }
  if (target.port < 1) return `address ${address}: port must be between 1 and 65535`;
  return undefined;
}

export function tcpProbe(o: TcpProbeOptions): Probe {
  const timeoutMs = o.timeoutMs ?? tcpTimeoutMsDefault;
  return async (signal) => {
    const target = splitHostPort(o.address);
    if (typeof target === 'string') return critical(`dial tcp: ${target}`);
    const deadline = startDeadline(timeoutMs, signal);
    try {
      await connect(target.host, target.port, deadline.signal);
      return passing(`TCP connect ${o.address}: Success`);
    } catch (err) {
      if (deadline.reason === 'timeout') return critical(`dial tcp ${o.address}: i/o timeout`);
      if (deadline.reason === 'canceled') return critical(`dial tcp ${o.address}: operation was canceled`);
      return critical(dialErrorText('tcp', o.address, err));
    } finally {
      deadline.dispose();
    }
  };
}

/** Resolves once connected (and closes at once), rejects with the connect error or on abort. */
function connect(host: string, port: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error('aborted'));
    // An empty host dials the local system, as Go's does.
    const socket = net.connect({ host: host || 'localhost', port });
    const abort = () => {
      socket.destroy();
      reject(new Error('aborted'));
    };
    signal.addEventListener('abort', abort, { once: true });
    socket.once('connect', () => {
      signal.removeEventListener('abort', abort);
      socket.destroy();
      resolve();
    });
    socket.once('error', (err) => {
      signal.removeEventListener('abort', abort);
      reject(err);
    });
  });
}
