/**
 * Why a listener could not bind, in words an operator can act on. uWebSockets.js only says "false"
 * when listen fails, and grpc-js wraps the cause in a sentence of its own; both front ends turn a failed
 * bind into a ListenError, whose reason comes from asking the OS again with a plain Node listener.
 */
import { createServer } from 'node:net';

export class ListenError extends Error {
  constructor(readonly host: string, readonly port: number, readonly code: string | undefined) {
    super(`address ${formatAddress(host, port)} ${reasonOf(code)}`);
  }
}

/** `host:port`, with brackets around an IPv6 host. */
export function formatAddress(host: string, port: number): string {
  return `${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
}

function reasonOf(code: string | undefined): string {
  switch (code) {
    case 'EADDRINUSE': return 'is already in use';
    case 'EACCES': return 'may not be bound by this user (ports below 1024 need privileges)';
    case 'EADDRNOTAVAIL': return 'is not an address of this machine';
    case 'ENOTFOUND': case 'EAI_AGAIN': return 'does not resolve';
    default: return `cannot be bound${code ? ` (${code})` : ''}`;
  }
}

/** The error code binding host:port gives right now (exclusively, as our listeners do), or undefined if it binds. */
export function bindErrorCode(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'unknown'));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(undefined)));
  });
}

/** A ListenError for a failed bind of host:port, with the reason the OS gives now. */
export async function listenErrorFor(host: string, port: number): Promise<ListenError> {
  return new ListenError(host, port, await bindErrorCode(host, port));
}
