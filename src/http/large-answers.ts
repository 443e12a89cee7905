/**
 * Large answers (a KV prefix read whole, a big list) and what they may hold. uWS's `end` keeps whatever
 * part of an answer the client has not read, in a copy of its own and with no timeout while the client
 * holds the connection open: clients asking for a large answer and never reading could make the agent hold
 * one copy per request, gigabytes within a minute. An answer from `streamedBytesMin` up is therefore
 * written a piece at a time as the client reads (uws.ts `streamAnswer`): the agent holds it once, closes
 * the connection when the client has read nothing for `writeIdleMs`, and counts it against a budget of
 * bytes in flight over all such answers. Past the budget a large answer is refused 503 (one is always
 * let through, whatever its size, when no other is in flight).
 */

/** Bodies from this many bytes (or UTF-16 units of a string) on are streamed and counted. */
export const streamedBytesMin = 1024 * 1024;
/** Bytes of large answers in flight, unless limits.http_answer_bytes_max says otherwise. */
export const answerBytesMaxDefault = 256 * 1024 * 1024;
/** How long a large answer's client may read nothing, unless limits.http_write_idle_timeout says otherwise. */
export const writeIdleMsDefault = 30_000;

export class AnswerBudget {
  private inFlight = 0;

  constructor(private readonly limits: { answerBytesMax: number }) {}

  /** Bytes of large answers not yet read by their clients. */
  get bytes(): number {
    return this.inFlight;
  }

  /** Counts `bytes` and returns true, or false when they do not fit beside the answers in flight. */
  take(bytes: number): boolean {
    if (this.inFlight > 0 && this.inFlight + bytes > this.limits.answerBytesMax) return false;
    this.inFlight += bytes;
    return true;
  }

  release(bytes: number): void {
    this.inFlight -= bytes;
  }
}
