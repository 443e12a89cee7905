/**
 * HTTP for the fault tests: one call with a deadline that never throws, and how a history records its
 * answer (ok / refused / invalid / unknown).
 */

export interface Answer {
  /** 0 when there was no HTTP answer (timeout, connection refused or reset). */
  status: number;
  text: string;
  headers: Headers;
  /** Why there was no answer. */
  error?: string;
  json<T = any>(): T;
}

/** One HTTP call that never throws: a timeout or a connection error is status 0. */
export async function http(base: string, method: string, path: string, o: { body?: string | object; timeoutMs?: number } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  let body: string | undefined;
  if (typeof o.body === 'string') body = o.body;
  else if (o.body !== undefined) { body = JSON.stringify(o.body); headers['content-type'] = 'application/json'; }
  try {
    const res = await fetch(base + path, { method, body, headers, signal: AbortSignal.timeout(o.timeoutMs ?? 5_000) });
    const text = await res.text();
    return { status: res.status, text, headers: res.headers, json: () => JSON.parse(text) };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    return { status: 0, text: '', headers: new Headers(), error: `${e.name}: ${e.cause?.code ?? e.message}`, json: <T>() => undefined as T };
  }
}

/** How a history records an answer (the recording rules in test/faults/README.md). */
export type Verdict = 'ok' | 'refused' | 'invalid' | 'unknown';

/**
 * 200 → ok; 409 (seed: 1025, did not acquire/release/apply) → refused, a definite "no"; other 4xx
 * (validation, invalid session, not found) → invalid, nothing changed; no answer, 5xx → unknown.
 */
export function verdictOf(a: Answer): Verdict {
  if (a.status === 200) return 'ok';
  if (a.status === 409) return 'refused';
  if (a.status >= 400 && a.status < 500 && a.status !== 408 && a.status !== 429) return 'invalid';
  return 'unknown';
}

/** The seed dialect's error code of a 4xx/5xx body, if any. */
export function errorCode(a: Answer): number | undefined {
  try { return (a.json() as { code?: number })?.code; } catch { return undefined; }
}

export function indexOf(a: Answer): number | undefined {
  const h = a.headers.get('x-consul-index');
  return h === null ? undefined : Number(h);
}
