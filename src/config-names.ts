/** The names the agent is given at start: its node name, its datacenter's and the hosts it answers to. */
import { ConfigError } from './config-error.ts';
import { isAllowedHostName } from './http/allowed-hosts.ts';

function nonEmpty(name: string, text: string): string {
  if (text.trim() === '') throw new ConfigError(`--${name} must not be empty`);
  return text;
}

/**
 * The agent's node name: a host name's characters. It names this node's snapshot objects in a cluster
 * (`<stream>/<node>/<slot>`), where a "/" would let one node's name be a prefix of another's objects.
 */
export function nodeName(text: string): string {
  const name = nonEmpty('node-name', text);
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(name)) {
    throw new ConfigError(`--node-name: "${name}" may hold only letters, digits, ".", "-" and "_", at most 128 of them`);
  }
  return name;
}

/** The datacenter's name, lowercased, as Consul does, and of Consul's characters. */
export function datacenter(text: string): string {
  const name = nonEmpty('datacenter', text).toLowerCase();
  if (!/^[a-z0-9_-]{1,64}$/.test(name)) {
    throw new ConfigError(`--datacenter: "${text}" may hold only letters, digits, "-" and "_" (it is lowercased), at most 64 of them`);
  }
  return name;
}

/**
 * http_allowed_hosts (--http-allowed-hosts): the host names requests may name (allowed-hosts.ts), each
 * `*`, a name, or `.domain` for a domain and the names under it; without a port (any port is accepted).
 */
export function allowedHosts(names: string[] | undefined): string[] | undefined {
  if (names === undefined) return undefined;
  const wrong = names.find((n) => !isAllowedHostName(n));
  if (wrong !== undefined) {
    throw new ConfigError(`--http-allowed-hosts: "${wrong}" is not a host name: give names such as roster.example.com, .example.com for a domain and the names under it, or * for every host, without a port`);
  }
  return names;
}
