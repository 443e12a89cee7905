/**
 * bench:memory's HTTP client: a keep-alive pool that retries back-pressure answers (503, 429) after their
 * Retry-After, and a loop running many requests on a few concurrent workers with progress on stderr.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';

const progressEveryMs = 5_000;
/** A request with no answer for this long fails instead of hanging the bench (session list is tens of MB). */
const requestTimeoutMs = 30_000;
/** 503 (writes in flight) and 429 (per-client cap) are back-pressure, not failures: retried this often. */
const overloadRetriesMax = 5;

export interface Answer { status: number; text: string; retryAfter: string | undefined }

/** 503/429 answers retried over the whole run (every client): how often the server pushed back. */
let retriedTotal = 0;

/** 503/429 answers retried so far over the whole run, by every pool. */
export const retriedSoFar = () => retriedTotal;

export class Http {
  private readonly pool: Pool;
  constructor(base: string, connections: number) {
    this.pool = new Pool(base, {
      connections, pipelining: 1,
      keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000,
      headersTimeout: requestTimeoutMs, bodyTimeout: requestTimeoutMs, connectTimeout: requestTimeoutMs,
    });
  }

  async send(method: 'GET' | 'PUT', path: string, body?: string, json = false): Promise<Answer> {
    for (let attempt = 0; ; attempt++) {
      const res = await this.pool.request({
        method, path, ...(body !== undefined ? { body } : {}),
        ...(json ? { headers: { 'content-type': 'application/json' } } : {}),
      });
      const retryAfter = res.headers['retry-after'];
      const a = { status: res.statusCode, text: await res.body.text(), retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter };
      if ((a.status !== 503 && a.status !== 429) || attempt >= overloadRetriesMax) return a;
      retriedTotal++;
      await sleep(Math.min(5_000, 1_000 * (Number(a.retryAfter) || 1)));
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  /** Ends every request in flight at once (a timeout or interrupt must not wait for them). */
  destroy(): Promise<void> {
    return this.pool.destroy();
  }
}

export const describeAnswer = (what: string, a: Answer) => `${what}: HTTP ${a.status} ${a.text.trim().slice(0, 200)}`;

export interface Phase { count: number; seconds: number; perS: number }

const duration = (s: number) => (s >= 60 ? `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s` : `${s.toFixed(0)}s`);

/**
 * Runs `one(i)` for every i below `total` on `workers` concurrent loops, printing progress to stderr every
 * 5 s when `label` is given. The first failure stops every loop and is thrown; so is `stopped()`.
 */
export async function runAll(label: string | undefined, total: number, workers: number, one: (i: number) => Promise<void>, stopped: () => boolean): Promise<Phase> {
  let next = 0;
  let done = 0;
  let failure: unknown;
  const t0 = performance.now();
  let lastAt = t0;
  let lastDone = 0;
  const timer = label === undefined ? undefined : setInterval(() => {
    const now = performance.now();
    const rate = done / ((now - t0) / 1000);
    const recent = (done - lastDone) / ((now - lastAt) / 1000);
    lastAt = now;
    lastDone = done;
    // The ETA uses the whole phase's rate: the last 5 s may fall on a pause (a snapshot) and say hours.
    process.stderr.write(`  ${label} ${done}/${total}  ${rate.toFixed(0)}/s (last 5 s ${recent.toFixed(0)}/s)  ETA ${rate > 0 ? duration((total - done) / rate) : '?'}\n`);
  }, progressEveryMs);
  const loop = async () => {
    while (failure === undefined && !stopped()) {
      const i = next++;
      if (i >= total) return;
      try {
        await one(i);
        done++;
      } catch (err) {
        failure ??= err;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(workers, total) }, loop));
  } finally {
    if (timer !== undefined) clearInterval(timer);
  }
  if (failure !== undefined) throw failure;
  if (done < total) throw new Error(`${label ?? 'requests'}: stopped after ${done} of ${total}`);
  const seconds = (performance.now() - t0) / 1000;
  return { count: total, seconds, perS: total / seconds };
}
