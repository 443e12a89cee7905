/**
 * What every answer tells about itself: the convention headers (x-request-id, x-response-time,
 * x-server-time) and one log line per answered request.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../ports/index.ts';
import { lineLimitOf } from '../util/line-limit.ts';

/** Characters and length of an x-request-id a client may choose; anything else is replaced. */
const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's x-request-id when it is a sane token (so it can be traced end to end), else a fresh one. */
export function requestIdOf(sent: string | undefined): string {
  return sent !== undefined && requestIdPattern.test(sent) ? sent : freshRequestId();
}

/**
 * The ids the agent gives are UUID-shaped: the first four groups of a random UUID drawn once per process,
 * and a counter as the last group. So they are unique across the agent's runs (a trace id, not a secret),
 * and one costs a number's hex text instead of a random UUID's thirty-odd string pieces.
 */
const requestIdBase = randomUUID().slice(0, 24);
let requestIdCounter = 0;

function freshRequestId(): string {
  requestIdCounter = requestIdCounter === 0xffff_ffff_ffff ? 1 : requestIdCounter + 1;
  const hex = requestIdCounter.toString(16);
  return requestIdBase + '000000000000'.slice(hex.length) + hex;
}

/** The most characters of a request's path its log line carries; a longer one is cut, and its length said. */
export const loggedPathMax = 1024;

/**
 * One line per answered request: debug below 500 and for a server error the request alone caused
 * (`callerFault`: `?dc=` naming another datacenter), warn for the others. Nothing is built unless the level
 * is on (the lock path is benchmarked with logging at info). The path is cut at `loggedPathMax` characters
 * (`pathChars` then gives its length), and warn lines are limited (line-limit.ts): a client repeating a
 * failing request cannot fill the log.
 */
export function logRequest(logger: Logger, reqId: string, method: string, route: string, path: string, status: number, ms: number, callerFault = false): void {
  const level = status >= 500 && !callerFault ? 'warn' : 'debug';
  if (!logger.isLevelEnabled(level)) return;
  if (level === 'warn' && !lineLimitOf(logger, 'warn', 'request').admit()) return;
  const cut = path.length > loggedPathMax;
  const fields = { reqId, method, route, path: cut ? `${path.slice(0, loggedPathMax)}…` : path, ...(cut ? { pathChars: path.length } : {}), status, ms: Math.round(ms * 1000) / 1000 };
  logger[level](fields, 'request');
}

let serverTimeMs = -1;
let serverTimeText = '';

/** x-server-time: the ISO 8601 text of now, made once per millisecond however many answers share it. */
export function serverTime(): string {
  const now = Date.now();
  if (now !== serverTimeMs) {
    serverTimeMs = now;
    serverTimeText = isoWithOffset(new Date(now));
  }
  return serverTimeText;
}

/** ISO 8601 with the zone written as an offset, e.g. 2026-11-22T21:14:06.123+00:00. */
export function isoWithOffset(d: Date): string {
  const offsetMin = -d.getTimezoneOffset();
  const local = new Date(d.getTime() + offsetMin * 60_000).toISOString().slice(0, -1);
  const sign = offsetMin >= 0 ? '+' : '-';
  const abs = Math.abs(offsetMin);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
