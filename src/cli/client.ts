/**
 * The agent's HTTP API as the `roster` client commands use it. The agent is found through `--http-addr`,
 * ROSTER_HTTP_ADDR or CONSUL_HTTP_ADDR (`host:port`, with or without `http://`/`https://`; see
 * connection.ts), default 127.0.0.1:8500; several addresses separated by commas are tried in order: a
 * request that cannot connect to one (nothing was sent) goes to the next, and the one that answered is
 * kept for the command's later requests. An HTTP answer, even an error, is never retried elsewhere.
 * `--token` / ROSTER_HTTP_TOKEN (then Consul's token variables) is sent as `Authorization: Bearer`.
 * Answers in either wire dialect are understood: the seed dialect's `{code, message}` errors and Consul's
 * plain text.
 * Requests go through node:http (node:https for an https address), loaded with the first request: a
 * `roster` call is short, and fetch would first load its HTTP stack (undici), about 20 ms of every call.
 */
import type { ClientRequest, IncomingMessage } from 'node:http';
import { agentBaseUrls, credentialsOf, type ConnectionOptions } from './connection.ts';
import { CliError } from './errors.ts';
import { parseExactJson } from './output.ts';
import { setLongTimeout } from '../util/timer.ts';

/**
 * A request that is not a blocking query gets this long for its answer. It is longer than the agent's
 * default write_timeout (30s), after which the agent answers a write whose commit it did not see with 503,
 * outcome unknown: that answer, not our own giving up, is what the user then reads.
 */
export const requestTimeoutMs = 40_000;

export { agentAddressesMax, agentBaseUrl, agentBaseUrls, type ConnectionOptions } from './connection.ts';

/**
 * Connection failures after which nothing reached the agent, so the request may go to the next address:
 * refused, no such host, no route. A reset or a timeout may come after the agent got the request, and is
 * reported instead.
 */
const failoverCodes = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

/**
 * A KV key or prefix as a path: each segment percent-encoded, the slashes kept. A `.` or `..` segment stays
 * as it is and reaches the agent literally (requests are sent without URL normalization, see requestPath),
 * so `tmp/../victim` names that key, never `victim`.
 */
export function keyPath(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}

/** An answer's headers, looked up by name in any case; a repeated header's values joined with ", ". */
export interface AnswerHeaders {
  get(name: string): string | null;
}

export interface Answer {
  status: number;
  headers: AnswerHeaders;
  body: Buffer;
  text: string;
  /** X-Consul-Index, when the answer carried one. */
  index: number | undefined;
  /** Where the token the request carried came from (undefined: none was sent); absent if not known. */
  sent?: { tokenSource: string | undefined };
  json<T = unknown>(): T;
}

/**
 * A body sent as it is read, chunked: its first bytes, then the rest of a stream. The rest is read only once
 * the connection is made, so a request that cannot connect leaves it unread for the next address. An answer
 * that comes before the body is whole (the agent refusing it as too large) stops the reading, and the body
 * is never finished, so nothing can take it for a whole one. An error thrown by the rest ends the request
 * and is the request's error.
 */
export class StreamedBody {
  /** Whether the rest began to be read: the body can no longer be sent to another address. */
  started = false;

  constructor(readonly head: Buffer, readonly rest: AsyncIterator<Buffer>) {}
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: string | Buffer | StreamedBody | Record<string, unknown>;
  /** @default requestTimeoutMs */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export class AgentClient {
  readonly baseUrls: readonly string[];
  private current = 0;

  constructor(baseUrls: string | readonly string[], private readonly token: string | undefined, private readonly tokenSource?: string) {
    this.baseUrls = typeof baseUrls === 'string' ? [baseUrls] : [...baseUrls];
  }

  static from(o: ConnectionOptions, env: NodeJS.ProcessEnv): AgentClient {
    const { token, source } = credentialsOf(o.token, env);
    return new AgentClient(agentBaseUrls(o.httpAddr, env), token, source);
  }

  /** The address in use: the first, or the one that last answered. */
  get baseUrl(): string {
    return this.baseUrls[this.current]!;
  }

  /** Moves on to the next address (after one could not be connected to); false when there is none left. */
  failOver(from: string): boolean {
    const i = this.baseUrls.indexOf(from);
    if (i < 0 || i + 1 >= this.baseUrls.length) return false;
    if (this.current === i) this.current = i + 1;
    return true;
  }

  /** Whether an error means the request never reached the agent (see failoverCodes). */
  static unreached(err: unknown): boolean {
    return failoverCodes.has(causeOf(err));
  }

  /** Headers every request and the stream upgrade carry. */
  authHeaders(): Record<string, string> {
    return this.token === undefined ? {} : { authorization: `Bearer ${this.token}` };
  }

  async request(method: string, path: string, o: RequestOptions = {}): Promise<Answer> {
    return this.send(method, path, o, 'answer');
  }

  /**
   * A GET whose answer is read as it arrives (a monitor's log): resolves with the answer once its head is
   * in (within `timeoutMs`), its body still to be read; `signal` ends it at any time.
   */
  openAnswer(path: string, o: Pick<RequestOptions, 'query' | 'timeoutMs'> & { signal: AbortSignal }): Promise<IncomingMessage> {
    return this.send('GET', path, o, 'head');
  }

  /**
   * Sends the request to the address in use, moving on to the next one while one cannot be connected to.
   * `timeoutMs` bounds the whole answer, or with `head` only its head's arrival (the body is then the
   * caller's to read).
   */
  private async send(method: string, path: string, o: RequestOptions, upTo: 'answer'): Promise<Answer>;
  private async send(method: string, path: string, o: RequestOptions, upTo: 'head'): Promise<IncomingMessage>;
  private async send(method: string, path: string, o: RequestOptions, upTo: 'answer' | 'head'): Promise<Answer | IncomingMessage> {
    const timeoutMs = o.timeoutMs ?? requestTimeoutMs;
    const timeout = new AbortController();
    const late = setLongTimeout(() => timeout.abort(), timeoutMs, false);
    const signal = o.signal ? AbortSignal.any([timeout.signal, o.signal]) : timeout.signal;
    const tried: string[] = [];
    try {
      for (let base = this.baseUrl; ; base = this.baseUrl) {
        try {
          const { url, target, headers, payload } = this.prepare(base, method, path, o);
          const res = await open(url, target, method, headers, payload, signal);
          if (upTo === 'head') return res;
          return { ...await readAnswer(res, base), sent: { tokenSource: this.tokenSource } };
        } catch (err) {
          if (o.signal?.aborted || err instanceof CliError) throw err; // ours, or a streamed body's own error
          if (timeout.signal.aborted) throw new CliError(unanswered(base, method, timeoutMs));
          tried.push(`${base}: ${explained(causeOf(err))}`);
          const resendable = !(o.body instanceof StreamedBody && o.body.started);
          if (AgentClient.unreached(err) && resendable && this.failOver(base)) continue;
          throw new CliError(tried.length === 1 ? `cannot reach the agent at ${tried[0]}` : `cannot reach any agent (${tried.join('; ')})`);
        }
      }
    } finally {
      late.clear();
    }
  }

  /** The request's agent, path (with its query), headers and body as sent to `base`. */
  private prepare(base: string, method: string, path: string, o: RequestOptions): { url: URL; target: string; headers: Record<string, string>; payload: Payload } {
    const url = new URL(base);
    const headers: Record<string, string> = this.authHeaders();
    let payload: Payload;
    if (o.body instanceof StreamedBody) {
      headers['transfer-encoding'] = 'chunked';
      return { url, target: requestPath(path, o.query), headers, payload: o.body };
    }
    if (o.body === undefined || Buffer.isBuffer(o.body)) payload = o.body;
    else if (typeof o.body === 'string') { payload = o.body; headers['content-type'] = 'text/plain;charset=UTF-8'; }
    else { payload = JSON.stringify(o.body); headers['content-type'] = 'application/json'; }
    // A body is sent with its length (never chunked); a PUT or POST without one says it has none.
    if (payload !== undefined) headers['content-length'] = String(Buffer.byteLength(payload));
    else if (method === 'PUT' || method === 'POST') headers['content-length'] = '0';
    return { url, target: requestPath(path, o.query), headers, payload };
  }

  get(path: string, o?: RequestOptions): Promise<Answer> { return this.request('GET', path, o); }
  put(path: string, o?: RequestOptions): Promise<Answer> { return this.request('PUT', path, o); }
  del(path: string, o?: RequestOptions): Promise<Answer> { return this.request('DELETE', path, o); }

  /** The answer's JSON when it is 200, else a CliError with the agent's message. */
  async ok<T>(answer: Promise<Answer>): Promise<T> {
    const a = await answer;
    if (a.status !== 200) throw failureOf(a);
    return a.json<T>();
  }
}

/** The whole answer, read to its end; `from` is the address that gave it, named when its JSON is bad. */
export async function readAnswer(res: IncomingMessage, from?: string): Promise<Answer> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  const text = body.toString('utf8');
  const answerHeaders = headersOf(res);
  const index = Number(answerHeaders.get('x-consul-index') ?? NaN);
  return {
    status: res.statusCode ?? 0, headers: answerHeaders, body, text,
    index: Number.isFinite(index) ? index : undefined,
    json: <T>() => answerJson(text, from, answerHeaders.get('content-type')) as T,
  };
}

/**
 * An answer's body as JSON. A body that is not (a proxy's or captive portal's page, a body cut short) is a
 * CliError naming the agent, the parser's reason, the content type and the size.
 */
function answerJson(text: string, from: string | undefined, type: string | null): unknown {
  try {
    return parseExactJson(text);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    const what = `${type ?? 'no content type'}, ${Buffer.byteLength(text)} bytes`;
    throw new CliError(`the agent${from === undefined ? '' : ` at ${from}`} answered something that is not JSON: ${reason} (${what})`);
  }
}

/**
 * The request target: `path` as given, with `query` appended. It is never put through a URL parser, which
 * would remove `.` and `..` segments (also written `%2E`): a key such as `tmp/../victim` would become
 * `victim`. Characters a request line may not carry (controls, spaces, non-ASCII) are percent-encoded as
 * a URL parser would.
 */
function requestPath(path: string, query: RequestOptions['query'] = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === false) continue;
    params.set(k, v === true ? '' : String(v));
  }
  const search = params.toString();
  const escaped = path.replace(/[^\x21-\x7e]+/gu, (s) => encodeURIComponent(s));
  return search === '' ? escaped : `${escaped}${escaped.includes('?') ? '&' : '?'}${search}`;
}

type Payload = string | Buffer | StreamedBody | undefined;

/** Sends one request for `target` to the agent at `url`; resolves once the answer's head is in. */
async function open(url: URL, target: string, method: string, headers: Record<string, string>, payload: Payload,
  signal: AbortSignal): Promise<IncomingMessage> {
  const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  return new Promise<IncomingMessage>((resolve, reject) => {
    // `path` in the options replaces the URL's: sent as it is, not normalized.
    const req = request(url, { method, headers, signal, path: target }, resolve);
    req.on('error', reject);
    if (payload instanceof StreamedBody) sendStreamed(req, payload);
    else req.end(payload);
  });
}

/** Writes a StreamedBody: its head at once, its rest once connected, as the connection takes it (see StreamedBody). */
function sendStreamed(req: ClientRequest, body: StreamedBody): void {
  let answered = false;
  req.once('response', (res: IncomingMessage) => {
    answered = true;
    // An answer before the end of the body: once it is read, the unfinished request goes.
    if (!req.writableEnded) res.once('end', () => req.destroy());
  });
  req.write(body.head);
  const pump = async () => {
    for (;;) {
      if (answered || req.destroyed) return;
      body.started = true;
      const next = await body.rest.next();
      if (answered || req.destroyed) return;
      if (next.done === true) { req.end(); return; }
      if (!req.write(next.value)) await drainedOrClosed(req);
    }
  };
  const start = () => { pump().catch((err: unknown) => req.destroy(err instanceof Error ? err : new Error(String(err)))); };
  req.once('socket', (socket) => { if (socket.connecting) socket.once('connect', start); else start(); });
}

/**
 * Resolves when the request can take more (drain) or never will (close). The listener of the event that
 * did not come is removed, so a long body waited on many times leaves none behind.
 */
function drainedOrClosed(req: ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      req.off('drain', done);
      req.off('close', done);
      resolve();
    };
    req.on('drain', done);
    req.on('close', done);
  });
}

function headersOf(res: IncomingMessage): AnswerHeaders {
  return {
    get: (name) => {
      const value = res.headers[name.toLowerCase()];
      return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
    },
  };
}

/**
 * A request given up unanswered. A write (any method but GET) may have reached the agent and be committed
 * later, so its message says so: retrying it blindly could apply it twice.
 */
function unanswered(base: string, method: string, timeoutMs: number): string {
  const late = `the agent at ${base} did not answer within ${timeoutMs / 1000}s`;
  return method === 'GET' ? late : `${late}; the write may still take effect: read it back before retrying`;
}

/** Node's certificate checks that fail on a certificate Node does not trust (self-signed, a private CA). */
const untrustedCertificate = /^(DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?)$/;

/**
 * A connection failure's code with what it likely means where the code alone says little to a user: an
 * answer that is not HTTP (llhttp's HPE_ codes: a gRPC, gossip or NATS port), a connection closed without
 * an answer, a certificate Node does not trust.
 */
function explained(code: string): string {
  if (code.startsWith('HPE_')) return `it did not answer as HTTP (${code}): is it the agent's HTTP port, not its gRPC or gossip port or another service?`;
  if (code === 'ECONNRESET') return 'the connection was closed without an answer (ECONNRESET): is it the agent\'s HTTP port, and http or https as the agent serves?';
  if (untrustedCertificate.test(code)) return `its certificate is not trusted (${code}): NODE_EXTRA_CA_CERTS=<the CA's PEM file> makes Node trust the CA that signed it`;
  return code;
}

/** What went wrong reaching the agent: the system's code (ECONNREFUSED, ENOTFOUND…) when there is one. */
function causeOf(err: unknown): string {
  const e = err as { code?: unknown; cause?: { code?: string; message?: string } };
  if (typeof e.code === 'string') return e.code;
  return e.cause?.code ?? e.cause?.message ?? (err instanceof Error ? err.message : String(err));
}

/** The agent's own words for a refusal: the seed dialect's `message`, Consul's plain text, else the status. */
export function agentMessage(a: Answer): string {
  const type = a.headers.get('content-type') ?? '';
  if (type.startsWith('application/json')) {
    try {
      const body = JSON.parse(a.text) as { message?: unknown };
      if (typeof body.message === 'string' && body.message !== '') return body.message;
    } catch { /* not the error body we know: fall through to the text */ }
  }
  const text = a.text.trim();
  return text !== '' && text.length <= 500 ? text : `the agent answered HTTP ${a.status}`;
}

/**
 * What to do about a refused token (401 in the seed dialect, Consul's 403 `ACL not found`), said after the
 * agent's words: with no token, how to give one (the command has no login); with one, where it came from.
 */
function credentialsHint(a: Answer): string {
  if (a.sent === undefined || !(a.status === 401 || (a.status === 403 && a.text.trim() === 'ACL not found'))) return '';
  const source = a.sent.tokenSource;
  return source === undefined
    ? ': no token was sent; give one with --token or ROSTER_HTTP_TOKEN (or CONSUL_HTTP_TOKEN)'
    : `: the agent refused the token from ${source}`;
}

export function failureOf(a: Answer): CliError {
  return new CliError(agentMessage(a) + credentialsHint(a));
}
