/**
 * A one-shot stop for waits: what a blocking request or a queued lock acquire hands its waits so that they
 * end when it is given up (the client went away, the session ended). It has the shape of an AbortSignal —
 * an AbortSignal can be passed wherever a StopSignal is taken — at a fraction of the cost: making an
 * AbortController and adding and removing one listener took about 9 µs here, a Stop about 0.3 µs, and a
 * queued acquire made two of them.
 */

/** What a wait listens to; an AbortSignal is one. */
export interface StopSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export class Stop implements StopSignal {
  private stopped = false;
  private listeners: (() => void)[] = [];

  get aborted(): boolean {
    return this.stopped;
  }

  /** Listeners are called once, in the order added; one added after the stop is never called. */
  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.stopped) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.listeners.indexOf(listener);
    if (at >= 0) this.listeners.splice(at, 1);
  }

  /** Stops, calling every listener; a second call does nothing. */
  abort(): void {
    if (this.stopped) return;
    this.stopped = true;
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) listener();
  }
}
