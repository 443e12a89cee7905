/**
 * Rate limiting per caller (http-conventions.md Limits): a fixed window of `limit` requests per
 * `periodMs` for each caller — the identity a request proved (its token's subject, its app key), or else
 * its client address. Callers are named by the server only after verification: a string the client
 * sends is never a key by itself, or a fresh one per request would never be limited. Every answer then carries
 * X-Rate-Limit-Limit, -Remaining and -Reset (seconds left in the window, never a timestamp); a caller past
 * its limit gets 429 with Retry-After. One limiter serves the HTTP API and the /v1/stream upgrades alike,
 * so a caller's requests and upgrades count against the same window.
 */
import { RegistryError } from '../domain/errors.ts';
import { intervalMs } from '../ports/clock.ts';
import { renderError, type Dialect, type Wire } from './render.ts';

export interface RateLimitOptions {
  limit: number;
  periodMs: number;
  /** Callers tracked at once; past it the oldest windows are forgotten. @default 100000 */
  identitiesMax?: number;
}

export interface RateDecision {
  allowed: boolean;
  headers: [string, string][];
  retryAfterSeconds: number;
}

interface Window {
  startMs: number;
  count: number;
}

export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly identitiesMax: number;

  constructor(private readonly o: RateLimitOptions) {
    this.identitiesMax = o.identitiesMax ?? 100_000;
  }

  /**
   * Counts one request of `identity`. Windows are measured on the interval clock (`nowMs` is its reading),
   * and so are the seconds left that Retry-After and X-Rate-Limit-Reset give: a wall clock set back or
   * forward neither holds a window open for the length of the step nor ends it early.
   */
  take(identity: string, nowMs: number = intervalMs()): RateDecision {
    let w = this.windows.get(identity);
    if (w === undefined || nowMs - w.startMs >= this.o.periodMs) {
      this.windows.delete(identity);
      w = { startMs: nowMs, count: 0 };
      this.forgetEnded(nowMs);
      this.windows.set(identity, w);
      this.trim();
    }
    const allowed = w.count < this.o.limit;
    if (allowed) w.count++;
    const resetSeconds = Math.max(0, Math.ceil((w.startMs + this.o.periodMs - nowMs) / 1000));
    return {
      allowed,
      retryAfterSeconds: Math.max(1, resetSeconds),
      headers: [
        ['X-Rate-Limit-Limit', String(this.o.limit)],
        ['X-Rate-Limit-Remaining', String(Math.max(0, this.o.limit - w.count))],
        ['X-Rate-Limit-Reset', String(resetSeconds)],
      ],
    };
  }

  /**
   * Forgets the windows that have ended, oldest first (windows are inserted as they start), up to the first
   * one still running: a caller that does not come back holds nothing past its window.
   */
  private forgetEnded(nowMs: number): void {
    for (const [key, w] of this.windows) {
      if (nowMs - w.startMs < this.o.periodMs) break;
      this.windows.delete(key);
    }
  }

  /** Callers tracked now (windows running). */
  get size(): number {
    return this.windows.size;
  }

  private trim(): void {
    // Map iteration is insertion order and windows are re-inserted when they restart: oldest first.
    for (const key of this.windows.keys()) {
      if (this.windows.size <= this.identitiesMax) break;
      this.windows.delete(key);
    }
  }
}

/**
 * One request's (or stream upgrade's) count against the limiter: taken once, against the first caller
 * named — the verified identity once authentication has passed, the client address for everything else.
 */
export class Admission {
  private decision: RateDecision | undefined;
  private counted = false;

  constructor(private readonly limiter: RateLimiter | undefined, private readonly dialect: Dialect) {}

  /** Counts the request against `caller` unless it was counted already; the 429 when it is past its limit. */
  admit(caller: string): Wire | undefined {
    if (!this.counted) this.decision = this.limiter?.take(caller);
    this.counted = true;
    return this.decision === undefined || this.decision.allowed ? undefined : rateLimited(this.decision, this.dialect);
  }

  /** The X-Rate-Limit-* headers every answer carries once the request was counted (none without a limiter). */
  get headers(): [string, string][] {
    return this.decision?.headers ?? [];
  }
}

/** A map key for a binary address (4 or 16 bytes): one char per byte, no Buffer, no formatting. */
export function addressKey(address: ArrayBuffer): string {
  return String.fromCharCode(...new Uint8Array(address));
}

/** The key of a caller known only by its address (an `addressKey`). */
export function addressCaller(key: string): string {
  return `addr:${key}`;
}

/** The key of a caller that proved a bearer token. */
export function tokenCaller(subject: string): string {
  return `token:${subject}`;
}

/** 429 in the dialect's format with Retry-After, for a caller past its limit. */
export function rateLimited(rate: RateDecision, dialect: Dialect): Wire {
  return renderError(new RegistryError('rateLimited', { retryAfterSeconds: rate.retryAfterSeconds }), dialect);
}
