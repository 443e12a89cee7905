/**
 * Where a client command finds the agent and which token it sends, from its flags and the environment.
 * Roster's own settings come first; Consul's variables are read after them, so a shell set up for
 * `consul` works as it is:
 *
 * * address: `--http-addr`, `ROSTER_HTTP_ADDR`, `CONSUL_HTTP_ADDR`, else 127.0.0.1:8500. Each is `host:port`,
 *   `http://host:port` or `https://host:port`, or several separated by commas. `CONSUL_HTTP_SSL=true` makes a
 *   `CONSUL_HTTP_ADDR` without a scheme https, as it does for `consul`. A `unix://` address is refused: the
 *   agent listens on TCP only.
 * * token: `--token`, `ROSTER_HTTP_TOKEN`, the file `CONSUL_HTTP_TOKEN_FILE` names, `CONSUL_HTTP_TOKEN`
 *   (Consul's own order between the last two: a token file is used instead of the variable). Each is
 *   trimmed of the blanks and line ends around it (a secret put in the environment from a file often keeps
 *   the file's last newline); one that is blank holds no token. A token holding anything but printable ASCII is a usage error naming its source:
 *   no header could carry a control character, and no token the agent takes has a space or non-ASCII.
 *
 * Consul's TLS variables (`CONSUL_CACERT`, `CONSUL_CAPATH`, `CONSUL_CLIENT_CERT`, `CONSUL_CLIENT_KEY`,
 * `CONSUL_TLS_SERVER_NAME`, `CONSUL_HTTP_SSL_VERIFY`) have no Roster setting to map onto and are not read:
 * an https agent's certificate is checked against Node's CAs (NODE_EXTRA_CA_CERTS adds one), always.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { defaultHttpAddr } from './defaults.ts';
import { usageError } from './errors.ts';

export interface ConnectionOptions {
  httpAddr?: string | undefined;
  token?: string | undefined;
}

/** Addresses given on the command line or in the environment: at most this many. */
export const agentAddressesMax = 16;
/** A token file longer than this is not a token (a bearer token the agent takes is at most 16 KiB). */
const tokenFileBytesMax = 16 * 1024;

/** Go's strconv.ParseBool words, as `consul` reads CONSUL_HTTP_SSL. */
const trueWords = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const falseWords = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** `host:port`, `http://host:port` or `https://host:port` → the base URL (no trailing slash). */
export function agentBaseUrl(flag: string | undefined, env: NodeJS.ProcessEnv): string {
  return agentBaseUrls(flag, env)[0]!;
}

/** The agents' base URLs, in the order given (`a,b,c`; blanks around commas ignored). */
export function agentBaseUrls(flag: string | undefined, env: NodeJS.ProcessEnv): string[] {
  const [given, source] = flag !== undefined ? [flag, '--http-addr']
    : env.ROSTER_HTTP_ADDR ? [env.ROSTER_HTTP_ADDR, 'ROSTER_HTTP_ADDR']
    : env.CONSUL_HTTP_ADDR ? [env.CONSUL_HTTP_ADDR, 'CONSUL_HTTP_ADDR']
    : [defaultHttpAddr, 'the default address'];
  const scheme = source === 'CONSUL_HTTP_ADDR' && consulSsl(env) ? 'https' : 'http';
  const parts = given.split(',').map((p) => p.trim());
  if (parts.some((p) => p === '')) throw usageError(`${source}: "${given}" has an empty address (write a,b,c)`);
  if (parts.length > agentAddressesMax) throw usageError(`${source}: at most ${agentAddressesMax} addresses`);
  return parts.map((p) => oneBaseUrl(p, source, scheme));
}

function consulSsl(env: NodeJS.ProcessEnv): boolean {
  const text = env.CONSUL_HTTP_SSL;
  if (text === undefined || text === '') return false;
  if (trueWords.has(text)) return true;
  if (falseWords.has(text)) return false;
  throw usageError(`CONSUL_HTTP_SSL: "${text}" is not true or false`);
}

function oneBaseUrl(given: string, source: string, scheme: 'http' | 'https'): string {
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(given) ? given : `${scheme}://${given}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw usageError(`${source}: "${given}" is not an address such as 127.0.0.1:8500 or http://127.0.0.1:8500`);
  }
  if (url.protocol === 'unix:') throw usageError(`${source}: "${given}" is a unix socket: the agent listens on TCP only; give host:port or http(s)://host:port`);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw usageError(`${source}: "${given}" must use http or https`);
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '') {
    throw usageError(`${source}: "${given}" must be only a scheme, host and port`);
  }
  return `${url.protocol}//${url.host}`;
}

/** A token and where it came from (`--token`, the variable's name, the file), named when the agent refuses it. */
export interface Credentials {
  token: string | undefined;
  /** Undefined when no token is sent. */
  source: string | undefined;
}

/**
 * The token to send and its source, or none (see the file's comment for the order). A blank `--token`
 * sends none; a blank variable or file is passed over for the next source, as an empty one is.
 */
export function credentialsOf(flag: string | undefined, env: NodeJS.ProcessEnv): Credentials {
  const from = (token: string | undefined, source: string): Credentials => ({ token, source: token === undefined ? undefined : source });
  if (flag !== undefined) return from(checkedToken(flag, '--token'), '--token');
  const own = env.ROSTER_HTTP_TOKEN ? checkedToken(env.ROSTER_HTTP_TOKEN, 'ROSTER_HTTP_TOKEN') : undefined;
  if (own !== undefined) return from(own, 'ROSTER_HTTP_TOKEN');
  const file = env.CONSUL_HTTP_TOKEN_FILE;
  const fromFile = file ? checkedToken(tokenFile(file), `CONSUL_HTTP_TOKEN_FILE (${file})`) : undefined;
  if (fromFile !== undefined) return from(fromFile, `CONSUL_HTTP_TOKEN_FILE (${file})`);
  return from(env.CONSUL_HTTP_TOKEN ? checkedToken(env.CONSUL_HTTP_TOKEN, 'CONSUL_HTTP_TOKEN') : undefined, 'CONSUL_HTTP_TOKEN');
}

/**
 * `given` trimmed, or undefined when that leaves nothing. What is left must be printable ASCII without
 * spaces (a JWT, Consul's UUIDs): anything else is a usage error naming `source` and the character, never
 * the token.
 */
function checkedToken(given: string, source: string): string | undefined {
  const token = given.trim();
  if (token === '') return undefined;
  const bad = /[^\x21-\x7e]/u.exec(token)?.[0];
  if (bad === undefined) return token;
  const point = bad.codePointAt(0)!;
  const name = `U+${point.toString(16).toUpperCase().padStart(4, '0')}`;
  const what = point < 0x20 || (point >= 0x7f && point <= 0x9f) ? 'a control character' : /\s/u.test(bad) ? 'a space' : 'a character that is not ASCII';
  throw usageError(`${source}: the token holds ${what} (${name}); a token is printable ASCII without spaces`);
}

/** What a token file holds (checkedToken trims it). Unreadable: a usage error. */
function tokenFile(path: string): string {
  const buffer = Buffer.alloc(tokenFileBytesMax + 1);
  let length = 0;
  try {
    const fd = openSync(path, 'r');
    try {
      for (;;) {
        const n = readSync(fd, buffer, length, buffer.length - length, null);
        length += n;
        if (n === 0 || length === buffer.length) break;
      }
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    throw usageError(`CONSUL_HTTP_TOKEN_FILE: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  if (length > tokenFileBytesMax) throw usageError(`CONSUL_HTTP_TOKEN_FILE: ${path} holds more than ${tokenFileBytesMax} bytes, which is no token`);
  return buffer.subarray(0, length).toString('utf8');
}
