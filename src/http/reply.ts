/**
 * What handlers return: the meaning of a response, not its bytes. The dialect module (render.ts)
 * turns a Reply into status, headers and body for `seed` or `consul`.
 */
import type { RegistryError } from '../domain/errors.ts';

/** Index headers of query endpoints (consul-compat.md §2). */
export interface IndexInfo {
  index: number;
  /** Sent as X-Consul-Effective-Consistency (health and catalog reads). */
  consistency?: 'leader' | 'stale' | 'consistent';
}

export type Reply =
  /**
   * A JSON value; `json` is pre-encoded text when the handler needs exact numbers (uint64 flags), and `tag`
   * that text's ETag when the handler keeps both rendered (conditional.ts entityTag).
   */
  /**
   * `bytesHint`: about how long the rendered body of a list that may be large will be (for all of
   * `value`); the budget of large answers is asked before it is rendered (dispatch.ts). `reservedBytes`:
   * bytes the handler took from that budget itself before building the answer (a transaction's), given
   * back by the exchange.
   */
  /** `status`: another status than 200 whose body is still the answer (the agent's health endpoints); `headers`: its own. */
  /** `cache`: a read Consul's agent caches, asked with `?cached`: sent with X-Cache and Age (query.ts cachedAnswer). */
  | {
    t: 'json'; value?: unknown; json?: string; tag?: string; index?: IndexInfo; pretty?: boolean; bytesHint?: number; reservedBytes?: number;
    status?: number; headers?: [string, string][]; cache?: boolean;
  }
  /**
   * 200 with no body (Consul's PUT endpoints that return nothing). `warning`: what the operation left
   * undone, sent in the seed dialect only as X-Roster-Warning (Consul's answer stays empty).
   */
  | { t: 'empty'; warning?: string }
  /** Raw bytes (KV `?raw`); `tag`: their ETag, when the handler keeps it (conditional.ts entityTag). */
  | { t: 'raw'; body: Buffer; index?: IndexInfo; tag?: string }
  /** A text document of the agent's own with its media type (the Prometheus exposition format). */
  | { t: 'text'; body: string; contentType: string; status?: number }
  /** A conditional write: seed answers `true` or the error; consul answers `true`/`false` with 200. */
  /** `index`: the entry that applied a successful write (sent as X-Consul-Index in the seed dialect). */
  | { t: 'outcome'; ok: boolean; failure?: RegistryError; index?: number }
  /** A missing KV key: 404 with the index headers (seed: error body; consul: empty body). */
  | { t: 'missing'; index: IndexInfo; failure: RegistryError }
  /** A transaction that did not apply: consul answers 409 with `json` (Consul's Results/Errors body), seed the error. */
  | { t: 'conflict'; json: string; failure: RegistryError }
  /** OPTIONS: 200, empty body, Allow header naming `allow` (OPTIONS among them). */
  | { t: 'options'; allow: string[] }
  /** A static file of the dashboard: its bytes, content type and caching rule, plus headers of its own (CSP). */
  | { t: 'file'; body: Buffer; contentType: string; cacheControl: string; headers?: [string, string][] }
  /** A redirect to another path of this agent (`/` and `/ui` to `/ui/`, as Consul answers). */
  | { t: 'redirect'; location: string; status: 301 | 302 }
  /** An answer written as it comes, until either side ends it (the log of `/v1/agent/monitor`). */
  | { t: 'feed'; contentType: string; feed: Feed };

/**
 * What writes a feed: `start` is called once the status and headers are on their way, with the writer of
 * the body, and returns what to do when the feed ends (the client went away, the server closes, or the
 * feed ended itself). A feed that is never started (a HEAD request) holds nothing.
 */
export interface Feed {
  start(out: FeedOut): () => void;
}

export interface FeedOut {
  /** Writes a chunk; false when the client is behind on what it was sent, and the chunk was not written. */
  write(chunk: string): boolean;
  /** Ends the answer. */
  end(): void;
}

export const json = (value: unknown, index?: IndexInfo): Reply => (index ? { t: 'json', value, index } : { t: 'json', value });
export const jsonText = (text: string, index?: IndexInfo): Reply => (index ? { t: 'json', json: text, index } : { t: 'json', json: text });
