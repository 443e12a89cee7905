/**
 * Consul writes a failing check's output as a Go error's text. Node reports the same failures as
 * system errors (code, syscall, address); these leaves turn one into the other, so an output read by
 * a Consul user or client looks like the one Consul would have written.
 */
import { isIPv6 } from 'node:net';

/** The fields Node sets on a system error (net, dns, child_process). */
export interface SystemError extends Error {
  code?: string;
  syscall?: string;
  address?: string;
  port?: number;
  hostname?: string;
  path?: string;
  /** OpenSSL's library and reason, on TLS errors. */
  library?: string;
  reason?: string;
}

/**
 * A URL's text with its password hidden, as Go's http.Client writes the URL of its errors (stripPassword):
 * `user:***@`; a user without a password is kept. A check's output is read by whoever may read the check.
 */
export function urlWithoutPassword(text: string): string {
  // The user information ends at the authority's last `@`, as Go's url.Parse reads it.
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)@/i, (all, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    return colon < 0 ? all : `${scheme}${userinfo.slice(0, colon)}:***@`;
  });
}

/** Go's errno texts (syscall.Errno.Error) for the codes a probe can meet. */
const errnoTexts: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset by peer',
  EHOSTUNREACH: 'no route to host',
  ENETUNREACH: 'network is unreachable',
  EADDRNOTAVAIL: 'cannot assign requested address',
  ETIMEDOUT: 'connection timed out',
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EPIPE: 'broken pipe',
  ENOTSOCK: 'socket operation on non-socket',
};

/** A Node error as a SystemError; an AggregateError (Happy Eyeballs tried several addresses) gives its first, like Go's primary. */
export function systemError(error: unknown): SystemError {
  if (error instanceof AggregateError && error.errors.length > 0) return systemError(error.errors[0]);
  if (error instanceof Error) return error as SystemError;
  return new Error(String(error));
}

export function errnoText(e: SystemError): string {
  return (e.code !== undefined ? errnoTexts[e.code] : undefined) ?? e.message;
}

/** Go's net.JoinHostPort: brackets around an IPv6 host. */
export function joinHostPort(host: string, port: number | string): string {
  return isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Go's net.SplitHostPort plus a numeric port; a string result is the error text after `dial tcp: `. */
export function splitHostPort(address: string): { host: string; port: number } | string {
  let host: string;
  let portText: string;
  if (address.startsWith('[')) {
    const end = address.indexOf(']');
    if (end < 0) return `address ${address}: missing ']' in address`;
    if (address[end + 1] !== ':') return `address ${address}: missing port in address`;
    host = address.slice(1, end);
    portText = address.slice(end + 2);
  } else {
    const colon = address.lastIndexOf(':');
    if (colon < 0) return `address ${address}: missing port in address`;
    host = address.slice(0, colon);
    portText = address.slice(colon + 1);
    if (host.includes(':')) return `address ${address}: too many colons in address`;
  }
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) return `address ${address}: invalid port`;
  return { host, port };
}

/**
 * Go's *net.OpError text for a failed dial: `dial tcp 127.0.0.1:1: connect: connection refused`,
 * `dial tcp: lookup nosuch.invalid: no such host`, `dial unix /run/x.sock: connect: no such file or directory`.
 * addr names the target when the error carries no resolved address.
 */
export function dialErrorText(network: 'tcp' | 'unix', addr: string, error: unknown): string {
  const e = systemError(error);
  if (e.syscall === 'getaddrinfo' || e.syscall === 'getaddrinfo_r') {
    const why = e.code === 'ENOTFOUND' ? 'no such host' : 'temporary failure in name resolution';
    return `dial ${network}: lookup ${e.hostname ?? addr}: ${why}`;
  }
  const where = e.address !== undefined && e.port !== undefined ? joinHostPort(e.address, e.port) : (e.address ?? addr);
  return `dial ${network} ${where}: ${e.syscall ?? 'connect'}: ${errnoText(e)}`;
}

/** True when the error happened while connecting (name lookup or connect), before any byte was exchanged. */
export function isDialError(error: unknown): boolean {
  const e = systemError(error);
  return e.syscall === 'connect' || e.syscall === 'getaddrinfo' || e.syscall === 'getaddrinfo_r';
}

const unknownAuthorityCodes = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
]);

/** Go's crypto/tls text for a TLS failure (a certificate that does not verify, a handshake OpenSSL refused); undefined for other errors. */
export function tlsErrorText(e: SystemError): string | undefined {
  const verify = 'tls: failed to verify certificate: x509:';
  if (e.code !== undefined && unknownAuthorityCodes.has(e.code)) return `${verify} certificate signed by unknown authority`;
  if (e.code === 'CERT_HAS_EXPIRED' || e.code === 'CERT_NOT_YET_VALID') return `${verify} certificate has expired or is not yet valid`;
  if (e.code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `${verify} ${altNameText(e)}`;
  if (e.code?.startsWith('ERR_SSL_') || e.library === 'SSL routines') return `tls: ${e.reason ?? e.message}`;
  return undefined;
}

/** Go: `certificate is valid for localhost, not example.test`. */
function altNameText(e: SystemError & { host?: string; cert?: { subjectaltname?: string } }): string {
  const names = (e.cert?.subjectaltname ?? '')
    .split(', ')
    .map((entry) => entry.replace(/^(DNS|IP Address):/, ''))
    .filter((name) => name !== '');
  return names.length > 0 ? `certificate is valid for ${names.join(', ')}, not ${e.host}` : `certificate is not valid for ${e.host}`;
}

/** Go's url.Error Op for a method: its first letter as given, the rest lower-cased (`Get`, `Post`, `post`). */
export function urlErrorOp(method: string): string {
  if (method === '') return 'Get';
  return method[0]! + method.slice(1).toLowerCase();
}

/** Go's time.Duration String() for a whole or fractional number of milliseconds: 500ms, 1.5s, 1m30s, 1h0m0s. */
export function formatGoDuration(ms: number): string {
  const ns = Math.round(ms * 1e6);
  if (ns === 0) return '0s';
  const sign = ns < 0 ? '-' : '';
  const abs = Math.abs(ns);
  const decimal = (n: number) => String(Number(n.toFixed(9)));
  if (abs < 1e3) return `${sign}${abs}ns`;
  if (abs < 1e6) return `${sign}${decimal(abs / 1e3)}µs`;
  if (abs < 1e9) return `${sign}${decimal(abs / 1e6)}ms`;
  const hours = Math.floor(abs / 3.6e12);
  const minutes = Math.floor((abs % 3.6e12) / 6e10);
  const seconds = `${decimal((abs % 6e10) / 1e9)}s`;
  if (hours > 0) return `${sign}${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${sign}${minutes}m${seconds}`;
  return `${sign}${seconds}`;
}
