/** TCP check (consul-compat.md §4 TCP): connect and close; the failure is Go's dial error text. */
import net from 'node:net';
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
