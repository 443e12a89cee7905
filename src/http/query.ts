/**
 * Query options shared by the read endpoints: blocking (`index`, `wait`), consistency (`consistent`,
 * `stale`), `dc`, and agent caching (`cached`, the Cache-Control header). Parsed before anything else, as Consul does, so a bad `index` is reported even
 * when the key is missing too.
 */
import { RegistryError } from '../domain/errors.ts';
import { blockingJitterDivisor, blockingWaitMsDefault, blockingWaitMsMax } from '../domain/limits.ts';
import type { Interest } from '../runtime/index.ts';
import { goDurationRule, parseGoDurationMs } from '../util/duration.ts';
import type { ApiContext } from './api.ts';
import type { Reply } from './reply.ts';
import { flag, param, type Request } from './request.ts';

/** The query parameters of the query options (parseQueryOptions). */
export const queryOptionParameters = ['index', 'wait', 'dc', 'stale', 'consistent', 'leader', 'max_stale', 'cached'] as const;

export interface QueryOptions {
  /** Wait for an index above this; 0 answers at once. */
  minIndex: number;
  waitMs: number;
  consistent: boolean;
  /** How the answer was read, for X-Consul-Effective-Consistency. */
  consistency: 'leader' | 'stale' | 'consistent';
}

const uint64Pattern = /^\d+$/;
const uint64Max = 18446744073709551615n;

/** Parses a uint64 query value to decimal text without leading zeros, or undefined when it is not one. */
export function parseUint64(text: string): string | undefined {
  if (!uint64Pattern.test(text)) return undefined;
  const n = BigInt(text);
  return n > uint64Max ? undefined : n.toString();
}

export function parseQueryOptions(req: Request, api: ApiContext): QueryOptions {
  const indexText = param(req, 'index');
  let minIndex = 0;
  if (indexText !== undefined && indexText !== '') {
    const parsed = parseUint64(indexText);
    if (parsed === undefined) throw new RegistryError('indexInvalid');
    minIndex = Number(parsed);
  }
  const waitMs = parseWaitMs(req);
  const consistent = flag(req, 'consistent');
  if (consistent && flag(req, 'stale')) {
    throw new RegistryError('staleWithConsistent');
  }
  // `?cached` is tested by presence, as Consul tests it; the reads its agent caches say so (cachedAnswer).
  if (flag(req, 'cached') && consistent) throw new RegistryError('cachedWithConsistent');
  checkCacheControl(req);
  const maxStale = param(req, 'max_stale');
  if (maxStale !== undefined && maxStale !== '' && parseGoDurationMs(maxStale) === undefined) {
    throw new RegistryError('maxStaleInvalid', { rule: goDurationRule, value: maxStale });
  }
  checkDatacenter(req, api);
  // One node reads one state: ?stale and ?leader answer from it as the default does; ?consistent adds a barrier.
  const consistency = consistent ? 'consistent' : flag(req, 'stale') && !flag(req, 'leader') ? 'stale' : 'leader';
  return { minIndex, waitMs, consistent, consistency };
}

const cacheControlSeconds = /^[+-]?\d+$/;
const int64Max = 9223372036854775807n;

/**
 * The request's Cache-Control, read as Consul's agent reads it for its cache on every query: directives split
 * at commas, without regard to case; `max-age=` and `stale-if-error=` must hold a whole number of seconds (Go's
 * Atoi: a sign allowed, within int64), anything else is left alone. The values ask nothing more here: every
 * read is answered from the agent's own state, which the log keeps current (see cachedAnswer).
 */
function checkCacheControl(req: Request): void {
  const raw = req.headers.get('cache-control');
  if (raw === undefined || raw === '') return;
  for (const part of raw.toLowerCase().split(',')) {
    const d = part.trim();
    const directive = d.startsWith('max-age=') ? 'max-age' : d.startsWith('stale-if-error=') ? 'stale-if-error' : undefined;
    if (directive === undefined) continue;
    const value = d.slice(directive.length + 1);
    const ok = cacheControlSeconds.test(value) && BigInt(value) <= int64Max && BigInt(value) >= -int64Max - 1n;
    if (!ok) throw new RegistryError('cacheControlInvalid', { directive });
  }
}

/**
 * The headers of a read Consul's agent caches, asked with `?cached`: `X-Cache: HIT`, and `Age` in whole seconds
 * since this node last heard from the log's leader (0 while in contact). Every node holds the whole state, kept
 * current by the log as Consul's background-refreshed agent cache is by the servers, so every such read is
 * served from it (a hit, also after a blocking wait), and its age is how long this node may have missed writes.
 */
export function cachedAnswer(reply: Reply, req: Request): Reply {
  if (reply.t !== 'json' || !flag(req, 'cached')) return reply;
  return { ...reply, cache: true };
}

/**
 * `wait`: a Go duration, at most 10 min (longer is cut to it); 5 min when absent, empty, 0 or negative, as
 * Consul's servers take a wait of 0 or less (RPCQueryTimeout): a client passing `wait=0` blocks, not spins.
 */
export function parseWaitMs(req: Request): number {
  const waitText = param(req, 'wait');
  if (waitText === undefined || waitText === '') return blockingWaitMsDefault;
  const parsed = parseGoDurationMs(waitText);
  if (parsed === undefined) throw new RegistryError('waitInvalid', { rule: goDurationRule });
  return parsed <= 0 ? blockingWaitMsDefault : Math.min(parsed, blockingWaitMsMax);
}

export function checkDatacenter(req: Request, api: ApiContext): void {
  const dc = param(req, 'dc');
  if (dc !== undefined && dc !== '' && dc !== api.datacenter) {
    throw new RegistryError('noPathToDatacenter', { dc });
  }
}

/** Whether the query waits before it answers: a barrier for `?consistent`, or a blocking query. */
export function waits(q: QueryOptions): boolean {
  return q.consistent || q.minIndex !== 0;
}

/**
 * Waits as the query options ask: a barrier first for `?consistent`, then, for a blocking query,
 * until `indexOf()` passes `minIndex` or the wait (plus up to wait/16 of jitter, like Consul) ends.
 */
export async function awaitQuery(req: Request, api: ApiContext, q: QueryOptions, interest: Interest, indexOf: () => number): Promise<void> {
  if (q.consistent) await api.runtime.barrier();
  if (q.minIndex === 0) return;
  const jitterMs = Math.random() * (q.waitMs / blockingJitterDivisor);
  await api.runtime.waitForIndex(interest, indexOf, q.minIndex, q.waitMs + jitterMs, req.signal);
}
