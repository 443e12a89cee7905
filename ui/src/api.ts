/**
 * The dashboard's HTTP calls: every one carries the token the user gave (kept in localStorage) as
 * `Authorization: Bearer`, and a refusal becomes an ApiError with the server's own message, which the
 * page shows as it is (refusals.ts says what kind of refusal it was).
 */
import { ApiError, failureOf } from './refusals.ts';

export { ApiError, errorText, type Refusal } from './refusals.ts';

const tokenKey = 'roster.token';

export const token = (): string => localStorage.getItem(tokenKey) ?? '';

export function setToken(value: string): void {
  if (value === '') localStorage.removeItem(tokenKey);
  else localStorage.setItem(tokenKey, value);
}

function headers(): Record<string, string> {
  const t = token();
  return t === '' ? {} : { Authorization: `Bearer ${t}` };
}

async function failure(res: Response): Promise<ApiError> {
  return failureOf(res.status, await res.text());
}

/** A GET answered with JSON. */
export async function api<T>(path: string): Promise<T> {
  const res = await fetch(path, { headers: headers() });
  if (!res.ok) throw await failure(res);
  return (await res.json()) as T;
}

/** A GET whose body is wanted as text (KV entries, whose Flags are exact uint64 digits). */
export async function apiText(path: string): Promise<string> {
  const res = await fetch(path, { headers: headers() });
  if (!res.ok) throw await failure(res);
  return res.text();
}

/**
 * A write (PUT or DELETE). Resolves with the body's text; a refusal rejects with the server's message.
 * A conditional write the consul dialect answers `false` with 200 is a refusal too. `contentType` labels
 * the body when it is not raw bytes (a transaction's JSON).
 */
export async function send(method: 'PUT' | 'DELETE', path: string, body?: BodyInit, contentType?: string): Promise<string> {
  const res = await fetch(path, { method, headers: contentType === undefined ? headers() : { ...headers(), 'Content-Type': contentType }, body });
  if (!res.ok) throw await failure(res);
  const text = await res.text();
  if (text.trim() === 'false') throw new ApiError(res.status, 'The agent answered false: the condition of the write did not hold, and nothing was changed.', 'conflict');
  return text;
}

/** A GET read as it arrives (the agent's log): `onText` gets each piece of text; resolves when the answer ends. */
export async function follow(path: string, signal: AbortSignal, onText: (text: string) => void): Promise<void> {
  const res = await fetch(path, { headers: headers(), signal });
  if (!res.ok) throw await failure(res);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    onText(decoder.decode(value, { stream: true }));
  }
}

/** A path segment list as a URL path, each segment encoded (a key may hold any character but `/`). */
export function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}
