/** The server's name of a probe's TLS connection, as Go's crypto/tls takes tls.Config.ServerName. */
import net from 'node:net';
import tls from 'node:tls';

/**
 * Sent as SNI when it is a host name, never when it is an IP address (RFC 6066; Node would send it and warn,
 * DEP0123); the certificate must hold it in either case.
 */
export function serverNameOptions(name: string): Pick<tls.ConnectionOptions, 'servername' | 'checkServerIdentity'> {
  if (!net.isIP(name)) return { servername: name };
  return { servername: '', checkServerIdentity: (_host, cert) => tls.checkServerIdentity(name, cert) };
}
