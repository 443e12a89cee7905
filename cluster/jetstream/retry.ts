/**
 * Which failures the JetStream log retries, how long it waits between tries, and the time bounds it
 * puts around requests that nats.js may leave waiting without end.
 */
import {
  AuthorizationError, ClosedConnectionError, DrainingConnectionError, InvalidArgumentError, PermissionViolationError,
} from '@nats-io/transport-node';
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
import { isLogForeign, type Logger } from '../../src/ports/index.ts';
import { setLongTimeout, sleepMs, type LongTimer } from '../../src/util/index.ts';
import { kind } from './options.ts';

/** Pause between restarts of a consumer that stopped, and between retries of a setup step or a publish, at most. */
export const retryPauseMsMax = 2000;

/** Exponential backoff from 50 ms, doubling per attempt, capped at `capMs`. */
export function backoffMs(attempt: number, capMs: number): number {
  return Math.min(capMs, 50 * 2 ** Math.min(attempt, 16));
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function isApiError(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}

/** True when JetStream says the stream does not exist (deleted on the nats-servers); false on any other answer. */
export function streamGone(jsm: JetStreamManager, stream: string): Promise<boolean> {
  return jsm.streams.info(stream).then(() => false, (err: unknown) => isApiError(err, JetStreamApiCodes.StreamNotFound));
}

/**
 * JetStream's "no suitable peers for placement" (a 400): fewer servers are up, or known to the cluster's
 * meta leader yet, than the replicas asked for. It passes once they are: servers started together with the
 * nodes are still joining, or one is restarting.
 */
export const noPeersForPlacementCode = 10005;

/**
 * JetStream's "replicas > 1 not supported in non-clustered mode": a nats-server running JetStream without a
 * cluster keeps one copy of a stream. Answered with status 500, but it never passes.
 */
export const replicasNotSupportedCode = 10074;

/** A setup step that refuses to go on (not a failure to retry): the node does not start. */
export class SetupRefusal extends Error {}

/**
 * Failures worth retrying: timeouts, no responders, connection trouble, JetStream saying it is
 * temporarily unavailable (no leader yet) or cannot place the replicas yet (see noPeersForPlacementCode).
 * Not: our own close, bad arguments (a payload above max_payload), permissions, an API error the server
 * means (any other 4xx status), or replicas a server without a cluster cannot keep (replicasNotSupportedCode).
 */
export function isTransient(err: unknown): boolean {
  if (err instanceof SetupRefusal) return false;
  if (err instanceof ClosedConnectionError || err instanceof DrainingConnectionError) return false;
  if (err instanceof InvalidArgumentError || err instanceof PermissionViolationError || err instanceof AuthorizationError) return false;
  if (err instanceof JetStreamApiError) return err.code !== replicasNotSupportedCode && (err.status >= 500 || err.code === noPeersForPlacementCode);
  return true;
}

/** `p`, or a rejection with `message` if it has not settled within `ms` (p's late outcome is ignored). */
export async function withinMs<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: LongTimer | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setLongTimeout(() => reject(new Error(message)), ms, false);
  });
  p.catch(() => undefined);
  try {
    return await Promise.race([p, late]);
  } finally {
    timer?.clear();
  }
}

/** True if `p` settled (either way) within `ms`. */
export async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: LongTimer | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setLongTimeout(() => resolve(false), ms, false);
  });
  try {
    return await Promise.race([p.then(() => true, () => true), timeout]);
  } finally {
    timer?.clear();
  }
}

/**
 * Retries a setup step of open() through transient failures (no JetStream leader yet, timeouts) until
 * the deadline. Each attempt is bounded too (`attemptMsMax`): the object store's list and get read
 * through a consumer that can wait without end when the stream's leader changes under it (a node
 * restarted while the nats-servers restarted printed nothing for 90 s); such an attempt counts as a
 * transient failure.
 */
export async function retrying<T>(
  logger: Logger, what: string, deadline: number, step: () => Promise<T>, attemptMsMax: number,
): Promise<T> {
  // The last failure that was an answer: reported instead of a timeout of the last, shortened attempt.
  let lastAnswer: unknown;
  for (let attempt = 0; ; attempt += 1) {
    const attemptMs = Math.max(1, Math.min(attemptMsMax, deadline - performance.now()));
    const noAnswer = `${what}: no answer within ${attemptMs} ms`;
    try {
      return await withinMs(step(), attemptMs, noAnswer);
    } catch (err) {
      // Another log than the one this node joined: said whole, for the agent to tell apart (log-identity.ts).
      if (isLogForeign(err)) throw err;
      const timedOut = err instanceof Error && err.message === noAnswer;
      if (!timedOut) lastAnswer = err;
      if (!isTransient(err) || performance.now() >= deadline) {
        const reported = timedOut && lastAnswer !== undefined ? lastAnswer : err;
        throw new Error(`${kind}.open: ${what}: ${errorMessage(reported)}`, { cause: reported });
      }
      logger.warn({ step: what, err: errorMessage(err) }, 'JetStream log: setup step failed, retrying');
      await sleepMs(Math.min(backoffMs(attempt, retryPauseMsMax), Math.max(0, deadline - performance.now())));
    }
  }
}
