/**
 * Admission of a request before it is routed: a head that can be served (framing, encoding), the
 * client's requests in flight under their cap, writes not overloaded, a declared body within the limit.
 * Authentication and the rate limit are the other half of admission (auth-gate.ts, rate-limit.ts).
 */
import { RegistryError } from '../domain/errors.ts';
import { SlotSet, type Slotted } from '../util/slot-set.ts';
import type { Head } from './uws.ts';

/**
 * A request counted in flight: its client's key (its binary address), looked up on first use and kept, and
 * its slot among the requests {@link InFlight} counts in total only.
 */
export interface InFlightRequest extends Slotted {
  clientKey(): string;
  /** The client's address as text (read only for a client past its cap). */
  addressText(): string;
}

/**
 * Requests in flight per client address (blocking queries included). Reading a request's address from
 * uWS costs more than the rest of its admission (a new ArrayBuffer per call), and no client can pass
 * the cap while all clients together are within it: requests are counted in total only, and looked up by
 * client once the total passes the cap — then every request still in flight is, and each new one.
 *
 * The requests counted in total only are kept in a SlotSet, not a Set: a Set that every request enters and
 * leaves would keep answered requests reachable between full collections (see SlotSet).
 */
export class InFlight {
  private readonly held = new Map<string, number>();
  /** Requests in flight counted in the total only (their client not looked up). */
  private readonly unkeyed = new SlotSet<InFlightRequest>();
  private total = 0;

  /**
   * `ownRequests`: how many of an address's requests (its text) are the agent's own checks' probes of its own
   * API, which the address has besides its cap (probes/own-requests.ts).
   */
  constructor(private readonly ownRequests: (address: string) => number = () => 0) {}

  /** Counts one more request; whether its client now has more than `max` in flight, the agent's own probes' apart. */
  enter(request: InFlightRequest, max: number): boolean {
    this.total += 1;
    if (this.total <= max) {
      this.unkeyed.add(request);
      return false;
    }
    for (const r of this.unkeyed.list()) {
      this.unkeyed.delete(r);
      this.count(r.clientKey());
    }
    const held = this.count(request.clientKey());
    return held > max && held - this.ownRequests(request.addressText()) > max;
  }

  /** The request is answered or gone: a request that was looked up by client gives its key from memory. */
  leave(request: InFlightRequest): void {
    this.total -= 1;
    if (this.unkeyed.delete(request)) return;
    const client = request.clientKey();
    const left = (this.held.get(client) ?? 1) - 1;
    if (left <= 0) this.held.delete(client);
    else this.held.set(client, left);
  }

  private count(client: string): number {
    const held = (this.held.get(client) ?? 0) + 1;
    this.held.set(client, held);
    return held;
  }
}

/**
 * Why a request head cannot be served, answered at once in the dialect's format:
 * * two Content-Length headers that differ (the body's end is ambiguous: 400, connection closed);
 * * a Transfer-Encoding other than `chunked` (uWS reads no body for it, so the request would wait for a
 *   body that never comes: 400, connection closed; a 4xx like every refusal of a malformed request);
 * * a path or query that is not UTF-8, raw or percent-encoded (uWS hands raw bytes on as U+FFFD, so two
 *   different keys would become one: 400);
 * * a header that carries credentials given twice (two Authorization, or two X-Consul-Token): which one
 *   decides would be a guess, so the request is refused before its credentials are judged (400), with or
 *   without authentication.
 */
export function unusableHead(head: Head): { error: RegistryError; close: boolean } | undefined {
  if (head.lengthsDiffer) return { close: true, error: new RegistryError('contentLengthsDiffer') };
  if (head.credentialRepeated !== undefined) return { close: false, error: credentialRepeated(head.credentialRepeated) };
  const coding = head.headers.get('transfer-encoding');
  if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked') {
    return { close: true, error: new RegistryError('transferEncodingUnsupported', { coding }) };
  }
  const where = !isUtf8Text(head.path) ? 'path' : !isUtf8Text(head.rawQuery) ? 'query' : undefined;
  if (where !== undefined) return { close: false, error: new RegistryError('requestNotUtf8', { where }) };
  return undefined;
}

/** The refusal of a request that carries the credential header `name` (lower-case) more than once. */
export function credentialRepeated(name: string): RegistryError {
  return new RegistryError('credentialHeaderRepeated', { header: name === 'authorization' ? 'Authorization' : 'X-Consul-Token' });
}

/**
 * Whether a raw path or query is UTF-8 once percent-decoded. uWS turns raw bytes that are not UTF-8
 * into U+FFFD (so a raw U+FFFD is refused too: percent-encode it); a malformed `%` escape is left to
 * the decoding that follows (URLSearchParams keeps it as text, the path decoder refuses it).
 */
function isUtf8Text(raw: string): boolean {
  if (raw.includes('\uFFFD')) return false;
  if (!raw.includes('%')) return true;
  try {
    decodeURIComponent(raw.replace(/%(?![0-9A-Fa-f]{2})/g, '%25'));
    return true;
  } catch {
    return false;
  }
}

/**
 * The method a request stands for: POST with `X-HTTP-Method-Override` stands for the named verb
 * (http-conventions.md "Verb override"); HEAD is answered as GET without the body.
 */
export function effectiveMethod(sent: string, headers: Map<string, string>): string {
  const override = headers.get('x-http-method-override')?.trim().toUpperCase();
  if (sent === 'POST' && override !== undefined && ['PUT', 'PATCH', 'DELETE'].includes(override)) return override;
  return sent;
}

/** Methods that change nothing (and carry no body). */
export const bodylessMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What a refusal before the body looks at. */
export interface Limits {
  inFlightMax: number;
  bodyBytesMax: number;
  overloaded?: () => boolean;
}

/**
 * The refusal of a request before its body is read, and whether it closes the connection: past the
 * client's requests in flight (`overCap`: 429), a write while writes are overloaded (503), a declared body over
 * `bodyBytesMax`, the route's limit (413, connection closed). The client's address is made only for the
 * message of the first.
 */
export function refusalBeforeBody(method: string, overCap: boolean, declared: number, limits: Limits, bodyBytesMax: number, client: { addressText(): string }):
  { error: RegistryError; close: boolean; more?: [string, string][] } | undefined {
  if (overCap) return { error: new RegistryError('tooManyInFlight', { address: client.addressText(), max: limits.inFlightMax }), close: true };
  if (!bodylessMethods.has(method) && limits.overloaded?.()) return { error: new RegistryError('writesOverloaded'), close: false };
  if (declared > bodyBytesMax) return { error: tooLarge(declared, bodyBytesMax), close: false, more: [['Connection', 'close']] };
  return undefined;
}

export function tooLarge(size: number, max: number): RegistryError {
  return new RegistryError('bodyTooLarge', { size, max });
}
