/**
 * Large answers (a KV prefix read whole, a big list, a transaction's results) and what answers may hold.
 * uWS's `end` keeps whatever part of an answer the client has not read, in a copy of its own and with no
 * timeout while the client holds the connection open, and it buffers every answer of requests a client
 * pipelined, read or not: clients asking for answers and never reading could make the agent hold one copy
 * per request, gigabytes within seconds. Every answer is therefore written as far as its socket takes it,
 * and the rest as the client reads (uws.ts `writeAnswer`): the agent holds it once, gives the connection no
 * further answer until it is written, closes the connection when the client has read nothing for
 * `writeIdleMs`, and counts it against a budget of bytes held over all clients. An answer from
 * `streamedBytesMin` up is counted before it is written, and past the budget refused 503 (one is always
 * let through, whatever its size, when no other large one is in flight); a smaller one is counted while
 * it is held.
 */
import { constants } from 'node:buffer';

/** Bodies from this many bytes (or UTF-16 units of a string) on are counted before they are written. */
export const streamedBytesMin = 1024 * 1024;
/** Bytes of answers held, unless limits.http_answer_bytes_max says otherwise. */
export const answerBytesMaxDefault = 256 * 1024 * 1024;
/** How long a client may read nothing of its answer, unless limits.http_write_idle_timeout says otherwise. */
export const writeIdleMsDefault = 30_000;
/** The longest answer the agent renders: a JSON answer is one string, and V8 makes none longer. */
export const answerCharsMax = constants.MAX_STRING_LENGTH;

/**
 * Bytes of answers held for clients that have not read them: large answers, counted from before they are
 * written (or rendered), and smaller ones counted while held. Only large answers are refused past the
 * budget; one is let through whatever its size when no other large answer is in flight.
 */
export class AnswerBudget {
  private large = 0;
  private small = 0;

  constructor(private readonly limits: { answerBytesMax: number }) {}

  /** Bytes of answers not yet read by their clients. */
  get bytes(): number {
    return this.large + this.small;
  }

  /** Counts a large answer's `bytes` and returns true, or false when they do not fit beside the answers held. */
  take(bytes: number): boolean {
    if (this.large > 0 && this.large + this.small + bytes > this.limits.answerBytesMax) return false;
    this.large += bytes;
    return true;
  }

  /** Counts a large answer's `bytes` whatever is held (its size was reserved before it was rendered); returns them. */
  takeAnyway(bytes: number): number {
    this.large += bytes;
    return bytes;
  }

  /** Gives back what `take` or `takeAnyway` counted. */
  release(bytes: number): void {
    this.large -= bytes;
  }

  /** Counts a smaller answer's `bytes` while the agent holds it for a client that has not read it. */
  hold(bytes: number): void {
    this.small += bytes;
  }

  /** Gives back what `hold` counted. */
  releaseHeld(bytes: number): void {
    this.small -= bytes;
  }
}

/**
 * The budget a request's route may reserve from before doing the work its answer reports (a transaction,
 * before it is proposed): the exchange's requests carry it (exchange.ts), other requests (tests that call
 * handlers directly) do not.
 */
export function answerBudgetOf(req: object): AnswerBudget | undefined {
  const budget = (req as { answers?: unknown }).answers;
  return budget instanceof AnswerBudget ? budget : undefined;
}
