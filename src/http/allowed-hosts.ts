/**
 * Which Host a request may name (`http_allowed_hosts`), judged before anything else looks at the request.
 * Without authentication a web page could otherwise use the agent through its visitor's browser by DNS
 * rebinding: the page's own name made to resolve to the agent's address, so the browser takes the agent
 * for the page's origin and lets the page read every answer. Such a request names the page's host, so a
 * name the agent does not answer to is refused. The policy is etcd's `--host-whitelist` and Geth's
 * `--http.vhosts`:
 * * an IP literal (v4, or v6 in brackets) is always accepted: rebinding needs a DNS name;
 * * `localhost` and names under `.localhost` are always accepted (browsers resolve them to loopback only);
 * * the names of the setting: a name exactly, `.example.com` for that domain and every name under it,
 *   `*` for every Host;
 * * without the setting, an agent listening on a loopback address also accepts the machine's own host
 *   name and nothing more, and an agent listening on any other address accepts every Host (its
 *   operator names the hosts to restrict it).
 * A request without a Host (HTTP/1.0) is accepted: a browser always sends one.
 */
import { isIP, isIPv4, isIPv6 } from 'node:net';
import { hostname } from 'node:os';

/** Whether a request naming this Host (the header's value as sent, port and all) is served. */
export type HostCheck = (host: string) => boolean;

/** The setting's word for every Host. */
export const everyHost = '*';

/**
 * The check for an agent listening on `listenHost`: `allowed` is the setting's names (absent: the
 * default described above); `ownName` the machine's host name.
 */
export function hostCheck(allowed: readonly string[] | undefined, listenHost: string, ownName: string = hostname()): HostCheck {
  const names = allowed ?? (isLoopback(listenHost) ? [ownName] : [everyHost]);
  if (names.includes(everyHost)) return acceptEvery;
  const exact = new Set<string>();
  const domains: string[] = [];
  for (const name of names.map(canonicalName)) {
    if (name.startsWith('.')) {
      domains.push(name);
      exact.add(name.slice(1));
    } else {
      exact.add(name);
    }
  }
  return (host) => {
    const name = nameOf(host);
    if (name === undefined) return false;
    if (name === '' || name === 'localhost' || name.endsWith('.localhost') || isIPv4(name) || name.startsWith('[')) return true;
    return exact.has(name) || domains.some((d) => name.endsWith(d));
  };
}

const acceptEvery: HostCheck = () => true;

/**
 * The host of a Host header without its port, lower case and without a final dot; `''` for an empty
 * header; a bracketed IPv6 literal keeps its brackets. Undefined when the header is no host at all (a
 * bracket that holds no IPv6 address, a port that is not digits).
 */
export function nameOf(host: string): string | undefined {
  const text = host.trim().toLowerCase();
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    if (end < 0 || !isIPv6(text.slice(1, end)) || !portOrNothing(text.slice(end + 1))) return undefined;
    return text.slice(0, end + 1);
  }
  const colon = text.indexOf(':');
  if (colon >= 0 && !portOrNothing(text.slice(colon))) return undefined;
  const name = colon >= 0 ? text.slice(0, colon) : text;
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

function portOrNothing(rest: string): boolean {
  return rest === '' || /^:\d{0,5}$/.test(rest);
}

function canonicalName(name: string): string {
  const lower = name.trim().toLowerCase();
  return lower.length > 1 && lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/**
 * Whether a listen address is loopback only: 127.0.0.0/8, ::1 (also as an IPv4-mapped address) or
 * `localhost`. Every other address, the wildcard ones (0.0.0.0, ::) included, and a host name, is not.
 */
export function isLoopback(listenHost: string): boolean {
  const host = listenHost.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (host === 'localhost') return true;
  if (isIPv4(host)) return host.startsWith('127.');
  if (isIP(host) !== 6) return false;
  if (host === '::1' || /^(0{0,4}:){7}0{0,3}1$/.test(host)) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(host);
  return mapped !== null && mapped[1]!.startsWith('127.');
}

/** A name the setting may hold: `*`, or a host name (a leading `.` for a domain and the names under it). */
export function isAllowedHostName(name: string): boolean {
  return name === everyHost || /^\.?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/i.test(name);
}
